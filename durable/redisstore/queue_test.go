package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// newTestQueue returns a queue on a store of its own client, as another
// process would have, closed by the test's cleanup.
func newTestQueue(t *testing.T, srv *redisServer, queue string, sopts []Option, qopts ...durable.Option) *durable.Queue {
	t.Helper()
	s := openStore(t, srv.client(t), queue, sopts...)
	q, err := durable.New(s, qopts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = q.Close() })
	return q
}

// TestQueueAcrossProcesses has a queue receive what another enqueues,
// woken by the notification alone (no safety poll), at the due time.
func TestQueueAcrossProcesses(t *testing.T) {
	srv := startRedis(t)
	noPoll := []Option{WithSafetyPoll(0)}
	producer := newTestQueue(t, srv, "q", noPoll)
	consumer := newTestQueue(t, srv, "q", noPoll, durable.WithBackoff(func(int) time.Duration { return 50 * time.Millisecond }))

	type received struct {
		d   *durable.Delivery
		at  time.Time
		err error
	}
	ch := make(chan received, 1)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	receive := func() {
		d, err := consumer.Receive(rctx)
		ch <- received{d, time.Now(), err}
	}
	go receive()
	time.Sleep(200 * time.Millisecond) // the consumer waits, with no timer armed

	for _, delay := range []time.Duration{0, 300 * time.Millisecond} {
		due := time.Now().Add(delay)
		require.NoError(t, producer.Enqueue(ctx, durable.Message{ID: "a", Payload: []byte("x"), Due: due}))
		r := <-ch
		require.NoError(t, r.err)
		late := r.at.Sub(due)
		t.Logf("due in %v: received %v late", delay, late)
		assert.GreaterOrEqual(t, late, time.Duration(0), "never before due")
		assert.Less(t, late, time.Second, "woken by the notification, not the safety poll")
		assert.Equal(t, 1, r.d.Attempt)
		if delay == 0 {
			// Retry: delivered again, attempt 2, after the delay.
			require.NoError(t, r.d.Retry(ctx, 100*time.Millisecond))
			go receive()
			r = <-ch
			require.NoError(t, r.err)
			assert.Equal(t, 2, r.d.Attempt)
		}
		require.NoError(t, r.d.Ack(ctx))
		assert.ErrorIs(t, r.d.Ack(ctx), durable.ErrLeaseLost)
		go receive()
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	r := <-ch
	assert.ErrorIs(t, r.err, context.Canceled)

	st, err := producer.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, durable.Stats{}, st)
}

// TestQueueLeaseExpiry has a consumer that does not ack: the message goes
// to another queue after the visibility timeout, and the first one's Ack
// fails.
func TestQueueLeaseExpiry(t *testing.T) {
	srv := startRedis(t)
	opts := []durable.Option{
		durable.WithVisibilityTimeout(200 * time.Millisecond),
		durable.WithBackoff(func(int) time.Duration { return 0 }),
	}
	a := newTestQueue(t, srv, "q", nil, opts...)
	b := newTestQueue(t, srv, "q", nil, opts...)
	require.NoError(t, a.Enqueue(ctx, durable.Message{ID: "m"}))
	d1, err := a.Receive(ctx)
	require.NoError(t, err)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	d2, err := b.Receive(rctx)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)
	assert.Equal(t, 2, d2.Attempt)
	assert.ErrorIs(t, d1.Ack(ctx), durable.ErrLeaseLost)
	assert.ErrorIs(t, d1.Extend(ctx, time.Minute), durable.ErrLeaseLost)
	require.NoError(t, d2.Ack(ctx))
}
