package durable

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorder is an Observer that keeps the events.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) Observe(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// take returns the events so far and forgets them.
func (r *recorder) take() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

func TestObserverHearsWhatTheQueueDoes(t *testing.T) {
	rec := &recorder{}
	q, mock, _ := testQueue(t, WithObserver(rec), WithMaxAttempts(2))
	ctx := context.Background()
	for _, id := range []string{"a", "b", "c"} {
		require.NoError(t, q.Enqueue(ctx, Message{ID: id, Due: mock.Now()}))
	}
	assert.Equal(t, []Event{
		{Kind: EventEnqueued, ID: "a", N: 1}, {Kind: EventEnqueued, ID: "b", N: 1}, {Kind: EventEnqueued, ID: "c", N: 1},
	}, rec.take())

	mock.Add(3 * time.Millisecond) // "a" is received 3ms after its due time
	a := receive(t, q)
	require.NoError(t, a.Ack(ctx))
	assert.Equal(t, []Event{
		{Kind: EventDelivered, ID: "a", N: 1, Attempt: 1, Lateness: 3 * time.Millisecond},
		{Kind: EventAcked, ID: "a", N: 1, Attempt: 1},
	}, rec.take())

	b := receive(t, q)
	require.NoError(t, b.Retry(ctx, time.Minute))
	c := receive(t, q)
	require.NoError(t, q.Enqueue(ctx, Message{ID: "c", Payload: []byte("v2"), Due: mock.Now().Add(time.Hour)}))
	require.ErrorIs(t, c.Ack(ctx), ErrLeaseLost)
	assert.Equal(t, []Event{
		{Kind: EventDelivered, ID: "b", N: 1, Attempt: 1, Lateness: 3 * time.Millisecond},
		{Kind: EventRetried, ID: "b", N: 1, Attempt: 1},
		{Kind: EventDelivered, ID: "c", N: 1, Attempt: 1, Lateness: 3 * time.Millisecond},
		{Kind: EventEnqueued, ID: "c", N: 1},
		{Kind: EventLeaseLost, ID: "c", N: 1, Attempt: 1},
	}, rec.take())

	// "b" again, its last attempt: a Retry sends it to the dead letters.
	mock.Add(time.Minute)
	b = receive(t, q)
	require.NoError(t, b.Retry(ctx, 0))
	assert.Equal(t, []Event{
		{Kind: EventDelivered, ID: "b", N: 1, Attempt: 2}, // due again a minute after the retry: on time
		{Kind: EventDead, ID: "b", N: 1, Attempt: 2},
	}, rec.take())

	// "c" v2 is received and its lease left to expire: the reap reports it.
	mock.Add(time.Hour)
	c = receive(t, q)
	assert.Equal(t, 1, c.Attempt)
	rec.take()
	mock.Add(q.cfg.visibility)
	// The reaper reports after its store call returns, on a goroutine of
	// its own: wait for the report itself.
	var reaped []Event
	require.Eventually(t, func() bool {
		reaped = append(reaped, rec.take()...)
		return len(reaped) > 0
	}, 5*time.Second, time.Millisecond)
	assert.Equal(t, []Event{{Kind: EventRetried, N: 1}}, reaped)
}

func TestEventKindNames(t *testing.T) {
	names := map[EventKind]string{
		EventEnqueued: "enqueued", EventDelivered: "delivered", EventAcked: "acked", EventRetried: "retried",
		EventDead: "dead", EventLeaseLost: "lease lost", EventHandled: "handled", EventSnoozed: "snoozed", 0: "unknown",
	}
	for k, name := range names {
		assert.Equal(t, name, k.String())
	}
}

// An ObserverFunc is called with every event the queue reports.
func TestObserverFunc(t *testing.T) {
	var mu sync.Mutex
	var kinds []EventKind
	q, mock, _ := testQueue(t, WithObserver(ObserverFunc(func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		kinds = append(kinds, e.Kind)
	})))
	require.NoError(t, q.Enqueue(context.Background(), Message{ID: "a", Due: mock.Now()}))
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []EventKind{EventEnqueued}, kinds)
}
