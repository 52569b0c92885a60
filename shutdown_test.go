package timingwheel_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel"
)

// fireOne starts a wheel on a mock clock with opts, fires one AfterFunc
// timer whose task signals started and then waits for release, and
// returns once the task runs.
func fireOne(t *testing.T, release <-chan struct{}, opts ...timingwheel.Option) *timingwheel.TimingWheel {
	t.Helper()
	mock := clock.NewMock()
	w, err := timingwheel.New(append([]timingwheel.Option{timingwheel.WithClock(mock)}, opts...)...)
	require.NoError(t, err)
	w.Start()
	started := make(chan struct{})
	w.AfterFunc(time.Second, func() {
		close(started)
		<-release
	})
	mock.Add(time.Second)
	require.NoError(t, w.Sync(context.Background()))
	<-started
	return w
}

func TestShutdownWaitsForTasksUnderWay(t *testing.T) {
	for name, exec := range map[string]func(func()){
		"goroutine per task": nil,
		"pool":               newPool(t, 2),
	} {
		t.Run(name, func(t *testing.T) {
			release := make(chan struct{})
			var opts []timingwheel.Option
			if exec != nil {
				opts = append(opts, timingwheel.WithExecutor(exec))
			}
			w := fireOne(t, release, opts...)
			done := make(chan error, 1)
			go func() { done <- w.Shutdown(context.Background()) }()
			select {
			case err := <-done:
				t.Fatalf("Shutdown returned %v while a task ran", err)
			case <-time.After(30 * time.Millisecond):
			}
			close(release)
			require.NoError(t, <-done)
		})
	}
}

// newPool returns an executor that runs tasks on n worker goroutines,
// stopped at the end of the test.
func newPool(t *testing.T, n int) func(func()) {
	tasks := make(chan func())
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for task := range tasks {
				task()
			}
		}()
	}
	t.Cleanup(func() {
		close(tasks)
		wg.Wait()
	})
	return func(task func()) { tasks <- task }
}

func TestShutdownReturnsTheContextErrorWhenTasksOutlastIt(t *testing.T) {
	release := make(chan struct{})
	w := fireOne(t, release)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, w.Shutdown(ctx), context.DeadlineExceeded)
	close(release)
	require.NoError(t, w.Shutdown(context.Background()), "a later Shutdown sees the task done")
}

func TestShutdownWithNothingUnderWay(t *testing.T) {
	w, err := timingwheel.New()
	require.NoError(t, err)
	w.Start()
	w.AfterFunc(time.Hour, func() { t.Error("a pending timer ran after Shutdown") })
	require.NoError(t, w.Shutdown(context.Background()))
	require.NoError(t, w.Shutdown(context.Background()), "Shutdown is idempotent")
	assert.Equal(t, 1, w.Len(), "the pending timer is kept, as by Stop")

	never, err := timingwheel.New()
	require.NoError(t, err)
	require.NoError(t, never.Shutdown(context.Background()), "on a wheel never started")
}

func TestWithLoggerReportsAPanickingTask(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}), nil))
	mock := clock.NewMock()
	w, err := timingwheel.New(timingwheel.WithClock(mock), timingwheel.WithLogger(logger),
		timingwheel.WithExecutor(func(task func()) { task() }))
	require.NoError(t, err)
	w.Start()
	defer w.Stop()
	w.AfterFunc(time.Second, func() { panic("order 42 has no customer") })
	ran := make(chan struct{})
	w.AfterFunc(2*time.Second, func() { close(ran) })
	mock.Add(2 * time.Second)
	require.NoError(t, w.Sync(context.Background()))
	<-ran // the wheel went on after the panic

	mu.Lock()
	defer mu.Unlock()
	out := buf.String()
	assert.Contains(t, out, "level=ERROR")
	assert.Contains(t, out, "timingwheel: task panicked")
	assert.Contains(t, out, `panic="order 42 has no customer"`)
	assert.Contains(t, out, "stack=")
	assert.Contains(t, out, "shutdown_test.go", "the stack names the panicking task's file")
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
