package pgstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// TestNotifyAnotherHandle has a store handle wake when another handle on
// the same queue enqueues a new earliest message, and not for a message
// after the earliest.
func TestNotifyAnotherHandle(t *testing.T) {
	pool := testPool(t)
	queue := freshQueue()
	producer := openStore(t, pool, queue, WithSafetyPoll(0))
	consumer := openStore(t, pool, queue, WithSafetyPoll(0))
	elsewhere := openStore(t, pool, freshQueue(), WithSafetyPoll(0))
	w, stop := consumer.Wakeups()
	defer stop()
	we, stopElsewhere := elsewhere.Wakeups()
	defer stopElsewhere()
	waitListening(t, consumer, w)
	waitListening(t, elsewhere, we)

	now := dbNow(t)
	require.NoError(t, producer.Enqueue(ctx, []durable.Message{msg("in an hour", now.Add(time.Hour))}))
	requireWakeup(t, w, "the first pending message")
	require.NoError(t, producer.Enqueue(ctx, []durable.Message{msg("in a minute", now.Add(time.Minute))}))
	requireWakeup(t, w, "a new earliest message")

	received := consumer.wake.received.Load()
	require.NoError(t, producer.Enqueue(ctx, []durable.Message{msg("in two hours", now.Add(2*time.Hour))}))
	requireNoWakeup(t, w, 300*time.Millisecond, "a message after the earliest")
	assert.Equal(t, received, consumer.wake.received.Load(), "no notification")
	requireNoWakeup(t, we, 0, "another queue")
	assert.Zero(t, elsewhere.wake.received.Load(), "another queue hears nothing")

	// Retry and Requeue notify as Enqueue does.
	require.NoError(t, producer.Enqueue(ctx, []durable.Message{msg("now", time.Time{})}))
	requireWakeup(t, w, "a message due now")
	c, err := producer.Claim(ctx, store.ClaimParams{Limit: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, c.Leases, 1)
	l := c.Leases[0]
	drain(w)
	require.NoError(t, producer.Retry(ctx, store.RetryParams{Lease: store.LeaseRef{ID: l.ID, Token: l.Token}}))
	requireWakeup(t, w, "a retry due now")
	c, err = producer.Claim(ctx, store.ClaimParams{Limit: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, c.Leases, 1)
	l = c.Leases[0]
	require.NoError(t, producer.Retry(ctx, store.RetryParams{Lease: store.LeaseRef{ID: l.ID, Token: l.Token}, Dead: true}))
	drain(w)
	require.NoError(t, producer.Requeue(ctx, store.RequeueParams{ID: l.ID, Due: time.Time{}}))
	requireWakeup(t, w, "a requeue due now")
}

// TestNotifyStop has the stop function of Wakeups end the sends, and the
// last one close the listening connection; a store that never calls
// Wakeups listens on none.
func TestNotifyStop(t *testing.T) {
	pool := testPool(t)
	queue := freshQueue()
	producer := openStore(t, pool, queue, WithSafetyPoll(0))
	consumer := openStore(t, pool, queue, WithSafetyPoll(50*time.Millisecond))
	w1, stop1 := consumer.Wakeups()
	w2, stop2 := consumer.Wakeups()
	waitListening(t, consumer, w1)
	drain(w2)
	requireWakeup(t, w1, "the safety poll")

	stop1()
	stop1() // harmless
	drain(w1)
	require.NoError(t, producer.Enqueue(ctx, []durable.Message{msg("a", time.Time{})}))
	requireWakeup(t, w2, "the channel still held")
	requireNoWakeup(t, w1, 200*time.Millisecond, "a channel given back")
	assert.Equal(t, 1, consumer.wake.subscribers())
	assert.Equal(t, int64(1), consumer.wake.listening.Load(), "still listening")

	stop2()
	require.Eventually(t, func() bool { return consumer.wake.listening.Load() == 0 }, 5*time.Second, time.Millisecond,
		"the last channel given back closes the connection")
	assert.Zero(t, producer.wake.listening.Load(), "a store that never called Wakeups listens on nothing")

	// Wakeups again listens again.
	w3, stop3 := consumer.Wakeups()
	defer stop3()
	waitListening(t, consumer, w3)
	require.NoError(t, producer.Enqueue(ctx, []durable.Message{msg("b", dbNow(t).Add(-time.Hour))}))
	requireWakeup(t, w3, "listening again")

	require.NoError(t, consumer.Close())
	assert.Zero(t, consumer.wake.listening.Load(), "Close closes the connection")
	w4, stop4 := consumer.Wakeups()
	stop4()
	requireNoWakeup(t, w4, 100*time.Millisecond, "after Close")
}

// TestNotifyReconnects ends the listening connection from the server: the
// store listens again, and wakes.
func TestNotifyReconnects(t *testing.T) {
	pool, producer, consumer, w := listeningPair(t)

	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE query = 'LISTEN "' || $1 || '"'`, consumer.channel).Scan(&n))
	require.Equal(t, 1, n, "one listening connection")
	requireWakeup(t, w, "listening again after the failure")
	require.Eventually(t, func() bool { return consumer.wake.listening.Load() == 1 }, 10*time.Second, time.Millisecond)
	drain(w)
	require.NoError(t, producer.Enqueue(ctx, []durable.Message{msg("a", time.Time{})}))
	requireWakeup(t, w, "a notification on the new connection")
}

// TestQueueAcrossProcesses has a queue receive what another enqueues,
// woken by the notification alone (no safety poll), at the due time.
func TestQueueAcrossProcesses(t *testing.T) {
	pool := testPool(t)
	queue := freshQueue()
	producer := newQueue(t, openStore(t, pool, queue, WithSafetyPoll(0)))
	consumer := newQueue(t, openStore(t, pool, queue, WithSafetyPoll(0)))

	type received struct {
		d   *durable.Delivery
		at  time.Time
		err error
	}
	ch := make(chan received, 1)
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
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
		require.NoError(t, r.d.Ack(ctx))
		go receive()
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	r := <-ch
	assert.ErrorIs(t, r.err, context.Canceled)
}

// TestNotifyRecheck: a claim that leased messages wakes the store's own
// subscribers a second later, so that its queue claims again and sees a
// message committed just after the claim read the table (whose writer,
// having seen the claimed message as earlier, did not notify).
func TestNotifyRecheck(t *testing.T) {
	s := newStore(t, WithSafetyPoll(0))
	w, stop := s.Wakeups()
	defer stop()
	waitListening(t, s, w)

	c, err := s.Claim(ctx, store.ClaimParams{Limit: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Empty(t, c.Leases)
	requireNoWakeup(t, w, 1500*time.Millisecond, "a claim that leased nothing")

	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("a", time.Time{})}))
	requireWakeup(t, w, "the notification of the enqueue")
	c, err = s.Claim(ctx, store.ClaimParams{Limit: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, c.Leases, 1)
	start := time.Now()
	requireWakeup(t, w, "the recheck")
	assert.GreaterOrEqual(t, time.Since(start), recheckDelay/2, "about a second after the claim")
	assert.Equal(t, int64(1), s.wake.received.Load(), "one notification: the enqueue's")
}

// TestNotifyRecheckRescues stages the race the recheck covers: a writer
// sees a pending message earlier than its own and does not notify; a
// queue claims that message before the writer commits, and waits, its
// claim not having seen the writer's message. Without the safety poll,
// only the recheck after the claim wakes it to receive the message.
func TestNotifyRecheckRescues(t *testing.T) {
	pool := testPool(t)
	queue := freshQueue()
	writer := openStore(t, pool, queue, WithSafetyPoll(0))
	cstore := openStore(t, pool, queue, WithSafetyPoll(0))
	consumer := newQueue(t, cstore)
	require.NoError(t, writer.Enqueue(ctx, []durable.Message{msg("x", dbNow(t).Add(-time.Second))}))

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	require.NoError(t, writer.EnqueueTx(ctx, tx, msg("r", dbNow(t).Add(100*time.Millisecond))))

	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	d, err := consumer.Receive(rctx)
	require.NoError(t, err)
	claimed := time.Now()
	require.Equal(t, "x", d.ID)
	require.NoError(t, d.Ack(ctx))
	received := cstore.wake.received.Load()

	got := make(chan error, 1)
	go func() {
		d, err := consumer.Receive(rctx)
		if err == nil && d.ID != "r" {
			err = fmt.Errorf("received %q", d.ID)
		}
		if err == nil {
			err = d.Ack(ctx)
		}
		got <- err
	}()
	// Let the receiver claim (and find nothing) before the commit; if it
	// claims after, it finds the message at once, and the test proves less.
	time.Sleep(200 * time.Millisecond)
	require.NoError(t, tx.Commit(ctx))
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the message committed after the claim was not received")
	}
	assert.Equal(t, received, cstore.wake.received.Load(), "the commit notified nobody")
	assert.GreaterOrEqual(t, time.Since(claimed), recheckDelay-100*time.Millisecond, "woken by the recheck")
}
