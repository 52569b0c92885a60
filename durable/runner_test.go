package durable

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/seed64e23a5c/timingwheel/internal/syncbuf"
)

// runInBackground starts q.Run and returns a function that stops it and
// returns Run's error.
func runInBackground(t *testing.T, q *Queue, workers int, h Handler) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	go func() { result <- q.Run(ctx, workers, h) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-result:
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return within 10s of its ctx ending")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func enqueueDueNow(t *testing.T, q *Queue, mock *clock.Mock, ids ...string) {
	t.Helper()
	for _, id := range ids {
		require.NoError(t, q.Enqueue(context.Background(), Message{ID: id, Payload: []byte(id), Due: mock.Now()}))
	}
}

// heldAhead is how far after now enqueueSoon's messages are due: a
// queue that claims a second ahead claims them ahead of their due time,
// and Run holds those it claims for a busy worker (a message already due
// is handed out by the claim).
const heldAhead = 10 * time.Millisecond

// enqueueSoon enqueues ids due heldAhead from now.
func enqueueSoon(t *testing.T, q *Queue, mock *clock.Mock, ids ...string) {
	t.Helper()
	for _, id := range ids {
		require.NoError(t, q.Enqueue(context.Background(), Message{ID: id, Payload: []byte(id), Due: mock.Now().Add(heldAhead)}))
	}
}

// eventuallyPending waits until n messages are pending.
func eventuallyPending(t *testing.T, q *Queue, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		st, err := q.Stats(context.Background())
		require.NoError(t, err)
		return st.Pending == n
	}, 5*time.Second, time.Millisecond)
}

// drained reports whether the queue holds nothing pending or in flight.
func drained(t *testing.T, q *Queue) func() bool {
	return func() bool {
		st, err := q.Stats(context.Background())
		require.NoError(t, err)
		return st.Pending == 0 && st.InFlight == 0
	}
}

func TestRunAcksWhatTheHandlerHandled(t *testing.T) {
	q, mock, _ := testQueue(t)
	enqueueDueNow(t, q, mock, "a", "b", "c", "d", "e")

	var mu sync.Mutex
	seen := map[string]int{}
	stop := runInBackground(t, q, 2, func(ctx context.Context, d *Delivery) error {
		mu.Lock()
		defer mu.Unlock()
		seen[d.ID]++
		assert.Equal(t, d.ID, string(d.Payload))
		return nil
	})
	require.Eventually(t, drained(t, q), 5*time.Second, time.Millisecond)
	require.NoError(t, stop())

	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, map[string]int{"a": 1, "b": 1, "c": 1, "d": 1, "e": 1}, seen)
	st, err := q.Stats(context.Background())
	require.NoError(t, err)
	assert.Zero(t, st.Dead)
}

func TestRunRetriesAnErrorWithTheBackoff(t *testing.T) {
	q, mock, _ := testQueue(t) // fixedBackoff: attempt n is retried n seconds later
	enqueueDueNow(t, q, mock, "flaky")

	attempts := make(chan int, 10)
	stop := runInBackground(t, q, 1, func(ctx context.Context, d *Delivery) error {
		attempts <- d.Attempt
		if d.Attempt == 1 {
			return errors.New("payment service down")
		}
		return nil
	})
	require.Equal(t, 1, <-attempts)
	// The retry is due 1s after the failure; nothing comes before.
	eventuallyPending(t, q, 1)
	mock.Add(999 * time.Millisecond)
	select {
	case a := <-attempts:
		t.Fatalf("attempt %d came before the back-off", a)
	case <-time.After(20 * time.Millisecond):
	}
	mock.Add(time.Millisecond)
	require.Equal(t, 2, <-attempts)
	require.Eventually(t, drained(t, q), 5*time.Second, time.Millisecond)
	require.NoError(t, stop())
}

func TestRunRecoversAPanicAndRetries(t *testing.T) {
	var logs syncbuf.Buffer
	q, mock, _ := testQueue(t, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	enqueueDueNow(t, q, mock, "boom")

	attempts := make(chan int, 10)
	stop := runInBackground(t, q, 1, func(ctx context.Context, d *Delivery) error {
		attempts <- d.Attempt
		if d.Attempt == 1 {
			panic("nil map")
		}
		return nil
	})
	require.Equal(t, 1, <-attempts)
	eventuallyPending(t, q, 1)
	mock.Add(time.Second)
	require.Equal(t, 2, <-attempts, "the worker survived the panic")
	require.Eventually(t, drained(t, q), 5*time.Second, time.Millisecond)
	require.NoError(t, stop())
	assert.Contains(t, logs.String(), "handler panicked")
	assert.Contains(t, logs.String(), "nil map")
}

func TestRunSendsTheLastFailureToTheDeadLetters(t *testing.T) {
	q, mock, _ := testQueue(t, WithMaxAttempts(1))
	enqueueDueNow(t, q, mock, "hopeless")
	stop := runInBackground(t, q, 1, func(ctx context.Context, d *Delivery) error {
		return errors.New("invalid order")
	})
	require.Eventually(t, func() bool {
		st, err := q.Stats(context.Background())
		require.NoError(t, err)
		return st.Dead == 1
	}, 5*time.Second, time.Millisecond)
	require.NoError(t, stop())
}

func TestRunRunsAtMostWorkersHandlersAtOnce(t *testing.T) {
	q, mock, _ := testQueue(t)
	ids := make([]string, 12)
	for i := range ids {
		ids[i] = fmt.Sprintf("m%02d", i)
	}
	enqueueDueNow(t, q, mock, ids...)

	const workers = 3
	var running, most atomic.Int32
	release := make(chan struct{})
	stop := runInBackground(t, q, workers, func(ctx context.Context, d *Delivery) error {
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-release
		return nil
	})
	require.Eventually(t, func() bool { return running.Load() == workers }, 5*time.Second, time.Millisecond)
	st, err := q.Stats(context.Background())
	require.NoError(t, err)
	assert.Equal(t, workers, st.InFlight, "no message is leased beyond the running handlers")
	close(release)
	require.Eventually(t, drained(t, q), 5*time.Second, time.Millisecond)
	require.NoError(t, stop())
	assert.Equal(t, int32(workers), most.Load())
}

// extendCounter is a Store that counts the lease extensions.
type extendCounter struct {
	Store
	extends atomic.Int32
}

func (s *extendCounter) Extend(ctx context.Context, p store.ExtendParams) error {
	err := s.Store.Extend(ctx, p)
	if err == nil {
		s.extends.Add(1)
	}
	return err
}

func TestRunExtendsTheLeaseOfASlowHandler(t *testing.T) {
	mock := clock.NewMock()
	mock.Set(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	bolt, err := OpenBoltStore(filepath.Join(t.TempDir(), "queue.db"), WithClock(mock))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, bolt.Close()) })
	store := &extendCounter{Store: bolt}
	const visibility = 30 * time.Second
	q, err := New(store, WithClock(mock), WithVisibilityTimeout(visibility), withClaimAhead(0))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, q.Close()) })
	enqueueDueNow(t, q, mock, "slow")

	started := make(chan *Delivery, 1)
	release := make(chan struct{})
	stop := runInBackground(t, q, 1, func(ctx context.Context, d *Delivery) error {
		started <- d
		<-release
		return nil
	})
	d := <-started
	// Four visibility timeouts pass while the handler runs, a tenth at a
	// time; each third of one, the lease is extended before the clock
	// moves on.
	for step := 1; step <= 40; step++ {
		mock.Add(visibility / 10)
		want := int32(step * 3 / 10) // 3s a step, one extension per 10s
		require.Eventually(t, func() bool { return store.extends.Load() >= want }, 5*time.Second, time.Millisecond,
			"step %d: %d extensions, want %d", step, store.extends.Load(), want)
	}
	st, err := q.Stats(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, st.InFlight, "the message is still leased to the slow handler")
	assert.Equal(t, 0, st.Pending, "the message was not given back for redelivery")
	noneDue(t, q)

	close(release)
	require.Eventually(t, drained(t, q), 5*time.Second, time.Millisecond)
	require.NoError(t, stop())
	assert.Equal(t, 1, d.Attempt)
}

func TestRunCancelsTheHandlerWhenTheMessageIsReplaced(t *testing.T) {
	rec := &recorder{}
	q, mock, _ := testQueue(t, WithObserver(rec))
	enqueueDueNow(t, q, mock, "order-1")

	causes := make(chan error, 2)
	payloads := make(chan string, 2)
	stop := runInBackground(t, q, 1, func(ctx context.Context, d *Delivery) error {
		payloads <- string(d.Payload)
		if string(d.Payload) == "v2" {
			return nil
		}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	})
	require.Equal(t, "order-1", <-payloads)
	// The order is changed while its first version is being handled: the
	// old lease is lost, and the handler hears of it at the next extension.
	require.NoError(t, q.Enqueue(context.Background(), Message{ID: "order-1", Payload: []byte("v2"), Due: mock.Now().Add(time.Minute)}))
	mock.Add(q.cfg.visibility / 3)
	require.ErrorIs(t, <-causes, ErrLeaseLost)
	mock.Add(time.Minute)
	require.Equal(t, "v2", <-payloads, "the new version is delivered, once")
	require.Eventually(t, drained(t, q), 5*time.Second, time.Millisecond)
	require.NoError(t, stop())
	var lost []Event
	for _, e := range rec.take() {
		if e.Kind == EventLeaseLost {
			lost = append(lost, e)
		}
	}
	assert.Equal(t, []Event{{Kind: EventLeaseLost, ID: "order-1", N: 1, Attempt: 1}}, lost,
		"one lost lease, reported once: by the extension that found it, not again by a Retry")
}

func TestRunWaitsForRunningHandlersAtShutdown(t *testing.T) {
	q, mock, _ := testQueue(t)
	enqueueDueNow(t, q, mock, "long")

	started := make(chan struct{})
	finish := make(chan struct{})
	var sawCancel atomic.Bool
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	go func() {
		result <- q.Run(ctx, 2, func(hctx context.Context, d *Delivery) error {
			close(started)
			<-hctx.Done() // shutdown reaches the handler...
			sawCancel.Store(true)
			<-finish // ...which takes its time to wind up, and succeeds
			return nil
		})
	}()
	<-started
	cancel()
	select {
	case err := <-result:
		t.Fatalf("Run returned %v while a handler was running", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(finish)
	require.NoError(t, <-result)
	assert.True(t, sawCancel.Load())
	st, err := q.Stats(context.Background())
	require.NoError(t, err)
	assert.Equal(t, Stats{}, st, "the handler's success was acked after Run's ctx ended")
}

func TestRunRejectsBadArguments(t *testing.T) {
	q, _, _ := testQueue(t)
	h := func(context.Context, *Delivery) error { return nil }
	err := q.Run(context.Background(), 0, h)
	require.ErrorIs(t, err, ErrInvalidRunner)
	assert.Contains(t, err.Error(), "workers is 0")
	err = q.Run(context.Background(), 1, nil)
	require.ErrorIs(t, err, ErrInvalidRunner)
	assert.Contains(t, err.Error(), "nil Handler")
}

func TestRunOnAClosedQueue(t *testing.T) {
	mock := clock.NewMock()
	q, err := Open(filepath.Join(t.TempDir(), "queue.db"), WithClock(mock))
	require.NoError(t, err)
	require.NoError(t, q.Close())
	err = q.Run(context.Background(), 1, func(context.Context, *Delivery) error { return nil })
	require.ErrorIs(t, err, ErrClosed)
}

func TestRunReturnsErrClosedWhenTheQueueCloses(t *testing.T) {
	mock := clock.NewMock()
	q, err := Open(filepath.Join(t.TempDir(), "queue.db"), WithClock(mock))
	require.NoError(t, err)
	result := make(chan error, 1)
	go func() {
		result <- q.Run(context.Background(), 4, func(context.Context, *Delivery) error { return nil })
	}()
	require.Eventually(t, func() bool { // Run's dispatcher waits, claiming for the 4 workers
		q.mu.Lock()
		defer q.mu.Unlock()
		return q.waiting == 1
	}, 5*time.Second, time.Millisecond)
	require.NoError(t, q.Close())
	require.ErrorIs(t, <-result, ErrClosed)
}
