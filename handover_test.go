package timingwheel

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stopsWithin calls w.Stop and fails the test if it does not return soon.
func stopsWithin(t *testing.T, w *TimingWheel) {
	t.Helper()
	done := make(chan struct{})
	go func() { w.Stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the wheel's Stop deadlocked")
	}
}

// runWorker runs the tasks sent on jobs, one at a time, on a goroutine of
// its own: a pool of one worker. It closes jobs and waits for the worker
// when the test ends.
func runWorker(t *testing.T, jobs chan func()) {
	var done sync.WaitGroup
	done.Add(1)
	go func() {
		defer done.Done()
		for task := range jobs {
			task()
		}
	}()
	t.Cleanup(func() {
		close(jobs)
		done.Wait()
	})
}

// Promise 6: the wheel's Stop called from a task under an executor that
// blocks (a pool of one worker, busy with that very task) returns: the
// hand-over in progress completes, and the tasks not handed over are kept
// (Stop on their timers returns true).
func TestWheelStopFromTaskUnderBlockingPool(t *testing.T) {
	jobs := make(chan func())
	var handovers atomic.Int32
	second := make(chan struct{})
	pool := func(task func()) {
		if handovers.Add(1) == 2 {
			close(second) // the worker is busy: this hand-over blocks
		}
		jobs <- task
	}
	runWorker(t, jobs)

	mock := clock.NewMock()
	w, err := New(WithClock(mock), WithExecutor(pool))
	require.NoError(t, err)
	w.Start()
	const n = 5
	var ran atomic.Int32
	var first atomic.Bool
	stopReturned := make(chan struct{})
	timers := make([]*Timer, n)
	for i := range timers {
		timers[i] = w.AfterFunc(time.Millisecond, func() {
			ran.Add(1)
			if first.CompareAndSwap(false, true) {
				<-second
				stopsWithin(t, w)
				close(stopReturned)
			}
		})
	}
	mock.Add(time.Millisecond)
	select {
	case <-stopReturned:
	case <-time.After(10 * time.Second):
		t.Fatal("the task calling Stop never ran")
	}
	// The second task was being handed over: it runs once the worker is
	// free. The other three were kept.
	require.Eventually(t, func() bool { return ran.Load() == 2 && w.Len() == n-2 }, 5*time.Second, time.Millisecond)
	kept := 0
	for _, tm := range timers {
		if tm.Stop() {
			kept++
		}
	}
	assert.Equal(t, n-2, kept)
	assert.Zero(t, w.Len())
	assert.EqualValues(t, 2, ran.Load())
}

// The wheel's Stop called from a task run inline on the driver goroutine
// returns, and keeps the rest of the batch.
func TestWheelStopFromInlineTask(t *testing.T) {
	mock := clock.NewMock()
	w, err := New(WithClock(mock), WithExecutor(inline))
	require.NoError(t, err)
	w.Start()
	var ran atomic.Int32
	timers := make([]*Timer, 4)
	for i := range timers {
		timers[i] = w.AfterFunc(time.Millisecond, func() {
			if ran.Add(1) == 1 {
				w.Stop()
			}
		})
	}
	mock.Add(time.Millisecond)
	require.Eventually(t, func() bool { return ran.Load() == 1 && w.Len() == 3 }, 5*time.Second, time.Millisecond)
	stopped := 0
	for _, tm := range timers {
		if tm.Stop() {
			stopped++
		}
	}
	assert.Equal(t, 3, stopped)
	stopsWithin(t, w)
	assert.EqualValues(t, 1, ran.Load())
}

// A timer that fired but whose task the executor has not started yet can
// still be stopped: the task then does not run.
func TestStopBeforeHandedOverTaskStarts(t *testing.T) {
	var queued []func()
	var mu sync.Mutex
	deferExec := func(task func()) { mu.Lock(); queued = append(queued, task); mu.Unlock() }
	w, mock := mockWheel(t, WithExecutor(deferExec))
	var runs atomic.Int32
	tm := w.AfterFunc(time.Millisecond, func() { runs.Add(1) })
	other := w.AfterFunc(time.Millisecond, func() { runs.Add(10) })
	advance(t, w, mock, time.Millisecond)
	mu.Lock()
	require.Len(t, queued, 2)
	tasks := queued
	mu.Unlock()
	assert.True(t, tm.Stop())
	assert.True(t, other.Reset(time.Hour), "a fired timer whose task has not started counts as pending")
	for _, task := range tasks {
		task()
	}
	assert.Zero(t, runs.Load(), "a stopped or reset timer's queued task ran")
	assert.Equal(t, 1, w.Len())
}

// A Scheduler that panics is reported to the panic handler, with the
// default executor too; the program goes on.
func TestSchedulerPanicIsRecovered(t *testing.T) {
	mock := clock.NewMock()
	got := make(chan any, 1)
	w, err := New(WithClock(mock), WithPanicHandler(func(r any) { got <- r }))
	require.NoError(t, err)
	w.Start()
	defer w.Stop()
	calls := 0
	w.ScheduleFunc(schedulerFunc(func(prev time.Time) time.Time {
		if calls++; calls > 1 {
			panic("next")
		}
		return prev.Add(time.Millisecond)
	}), func() {})
	mock.Add(time.Millisecond)
	select {
	case r := <-got:
		assert.Equal(t, "next", r)
	case <-time.After(5 * time.Second):
		t.Fatal("the panic was not reported")
	}
}

// The wheel's Stop, like time.Timer's, does not wait for a task under way,
// even one run inline on the driver: it returns while the task runs, the
// driver exits when the task returns, and Shutdown is what waits for it.
func TestWheelStopDoesNotWaitForARunningTask(t *testing.T) {
	mock := clock.NewMock()
	w, err := New(WithClock(mock), WithExecutor(inline))
	require.NoError(t, err)
	w.Start()
	entered, release := make(chan struct{}), make(chan struct{})
	var returned atomic.Bool
	w.AfterFunc(time.Millisecond, func() {
		close(entered)
		<-release
		returned.Store(true)
	})
	w.AfterFunc(2*time.Millisecond, func() { t.Error("a task was handed over after Stop returned") })
	mock.Add(time.Millisecond)
	<-entered
	mock.Add(time.Millisecond)
	w.Stop() // returns while the task runs
	assert.False(t, returned.Load())
	shut := make(chan error, 1)
	go func() { shut <- w.Shutdown(context.Background()) }()
	select {
	case <-shut:
		t.Fatal("Shutdown returned while the task was running")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	select {
	case err := <-shut:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not return")
	}
	assert.True(t, returned.Load())
	<-w.exited
	assert.Equal(t, 1, w.Len(), "the timer not handed over stays pending")
}

// Promise 6: a pool of one worker shared by two wheels, whose worker runs
// a task of wheel A that stops wheel B while B's driver waits to hand the
// pool a task. B's Stop returns at once, and B's task is never handed
// over once the pool gives up on it.
func TestStopWhileHandingOverToASharedPool(t *testing.T) {
	jobs := make(chan func())
	release := make(chan struct{})
	submit := func(task func()) {
		select {
		case jobs <- task:
		case <-release: // the pool gives up on the task
		}
	}
	runWorker(t, jobs)

	bHandingOver := make(chan struct{})
	var once sync.Once
	mockB := clock.NewMock()
	b, err := New(WithClock(mockB), WithExecutor(func(task func()) {
		once.Do(func() { close(bHandingOver) })
		submit(task)
	}))
	require.NoError(t, err)
	b.Start()

	mockA := clock.NewMock()
	a, err := New(WithClock(mockA), WithExecutor(submit))
	require.NoError(t, err)
	a.Start()
	defer a.Stop()

	aRunning, bStopped, hold := make(chan struct{}), make(chan struct{}), make(chan struct{})
	defer close(hold)
	a.AfterFunc(time.Millisecond, func() {
		close(aRunning)
		<-bHandingOver
		b.Stop()
		close(bStopped)
		<-hold // the worker stays busy until B's driver is gone
	})
	mockA.Add(time.Millisecond)
	<-aRunning // the worker runs A's task, which waits
	var bRan atomic.Int32
	b.AfterFunc(time.Millisecond, func() { bRan.Add(1) })
	b.AfterFunc(time.Millisecond, func() { bRan.Add(1) })
	mockB.Add(time.Millisecond) // B's driver blocks handing its first task over
	select {
	case <-bStopped:
	case <-time.After(10 * time.Second):
		t.Fatal("B's Stop waited for B's driver, which waits for the pool")
	}
	close(release)
	select {
	case <-b.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("B's driver did not exit once the hand-over gave up")
	}
	assert.Zero(t, bRan.Load(), "the task being handed over was given up by the pool")
	assert.Equal(t, 1, b.Len(), "the task not handed over stays pending")
}
