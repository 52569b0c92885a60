package redisstore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// The tests of Queue.Run on a real redis-server. Redis's clock drives the
// leases, so these run on the real clock, with a short visibility timeout.

const runVisibility = 300 * time.Millisecond

// runInBackground runs q.Run with workers and h until the returned
// function is called; that function returns Run's result.
func runInBackground(t *testing.T, q *durable.Queue, workers int, h durable.Handler) (stop func() error) {
	t.Helper()
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- q.Run(runCtx, workers, h) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				err = fmt.Errorf("Run did not return 30s after its ctx ended")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func eventuallyDrained(t *testing.T, q *durable.Queue) {
	t.Helper()
	require.Eventually(t, func() bool {
		st, err := q.Stats(ctx)
		require.NoError(t, err)
		return st.Pending+st.InFlight+st.Dead == 0
	}, 20*time.Second, 5*time.Millisecond)
}

// A handler three times slower than the visibility timeout keeps its
// message: Run extends the lease in Redis, so nobody else receives it.
func TestRunKeepsASlowHandlersLeaseOnRedis(t *testing.T) {
	srv := startRedis(t)
	q := newTestQueue(t, srv, "q", nil, durable.WithVisibilityTimeout(runVisibility))
	other := newTestQueue(t, srv, "q", nil, durable.WithVisibilityTimeout(runVisibility))
	require.NoError(t, q.Enqueue(ctx, durable.Message{ID: "slow"}))

	var calls atomic.Int32
	started := make(chan struct{}, 2)
	stop := runInBackground(t, q, 2, func(ctx context.Context, d *durable.Delivery) error {
		calls.Add(1)
		started <- struct{}{}
		time.Sleep(3 * runVisibility) // slow work, past the first deadline
		return ctx.Err()
	})
	<-started
	// Another process receiving meanwhile gets nothing.
	rctx, cancel := context.WithTimeout(ctx, 4*runVisibility)
	defer cancel()
	d, err := other.Receive(rctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "received %+v while its handler ran", d)
	eventuallyDrained(t, q)
	require.NoError(t, stop())
	assert.EqualValues(t, 1, calls.Load())
}

// A message replaced by another process while its handler runs: the
// handler's ctx ends with ErrLeaseLost at the next extension, and the new
// version is handled once, on its first attempt.
func TestRunCancelsTheHandlerOfAReplacedMessageOnRedis(t *testing.T) {
	srv := startRedis(t)
	q := newTestQueue(t, srv, "q", nil, durable.WithVisibilityTimeout(runVisibility))
	other := newTestQueue(t, srv, "q", nil)
	require.NoError(t, q.Enqueue(ctx, durable.Message{ID: "order", Payload: []byte("v1")}))

	started := make(chan struct{})
	causes := make(chan error, 1)
	var mu sync.Mutex
	var handled []string
	stop := runInBackground(t, q, 1, func(ctx context.Context, d *durable.Delivery) error {
		mu.Lock()
		handled = append(handled, fmt.Sprintf("%s@%d", d.Payload, d.Attempt))
		mu.Unlock()
		if string(d.Payload) == "v1" {
			close(started)
			<-ctx.Done()
			causes <- context.Cause(ctx)
		}
		return nil
	})
	<-started
	require.NoError(t, other.Enqueue(ctx, durable.Message{ID: "order", Payload: []byte("v2"), Due: time.Now().Add(200 * time.Millisecond)}))
	select {
	case cause := <-causes:
		require.ErrorIs(t, cause, durable.ErrLeaseLost)
	case <-time.After(10 * time.Second):
		t.Fatal("the handler's ctx did not end after its message was replaced")
	}
	eventuallyDrained(t, q)
	require.NoError(t, stop())
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"v1@1", "v2@1"}, handled)
}

// When Run's ctx ends, it waits for the running handler, whose result is
// then written: the message is acked.
func TestRunWaitsForItsHandlerAtShutdownOnRedis(t *testing.T) {
	srv := startRedis(t)
	q := newTestQueue(t, srv, "q", nil, durable.WithVisibilityTimeout(runVisibility))
	require.NoError(t, q.Enqueue(ctx, durable.Message{ID: "long"}))

	started, finish := make(chan struct{}), make(chan struct{})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- q.Run(runCtx, 2, func(hctx context.Context, d *durable.Delivery) error {
			close(started)
			<-hctx.Done()
			<-finish
			return nil
		})
	}()
	<-started
	cancel()
	select {
	case err := <-done:
		t.Fatalf("Run returned (%v) with its handler running", err)
	case <-time.After(2 * runVisibility): // past the lease, which Run keeps
	}
	close(finish)
	require.NoError(t, <-done)
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, durable.Stats{}, st, "acked before Run returned")
}

// 3,000 messages due now through Run with 8 workers, in batches and with
// the messages held for busy workers: each is handled once and acked.
func TestRunHandlesEachMessageOnceOnRedis(t *testing.T) {
	srv := startRedis(t)
	q := newTestQueue(t, srv, "q", nil)
	const n = 3000
	for i := range n {
		require.NoError(t, q.Enqueue(ctx, durable.Message{ID: fmt.Sprintf("m%04d", i)}))
	}
	var mu sync.Mutex
	seen := map[string]int{}
	stop := runInBackground(t, q, 8, func(_ context.Context, d *durable.Delivery) error {
		mu.Lock()
		seen[d.ID]++
		mu.Unlock()
		return nil
	})
	eventuallyDrained(t, q)
	require.NoError(t, stop())
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seen, n)
	for id, k := range seen {
		require.Equal(t, 1, k, "%s handled %d times", id, k)
	}
}
