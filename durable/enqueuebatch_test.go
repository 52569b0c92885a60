package durable

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Enqueue takes many messages: all are written, in the order of the
// batch for equal due times, and a receiver waiting for the queue wakes
// for them as for one.
func TestEnqueueBatch(t *testing.T) {
	q, mock, _ := testQueue(t)
	ctx := context.Background()
	got := waitingReceive(t, q)
	due := mock.Now()
	batch := make([]Message, 50)
	for i := range batch {
		batch[i] = Message{ID: fmt.Sprintf("b%02d", i), Payload: []byte("x"), Due: due}
	}
	require.NoError(t, q.Enqueue(ctx, batch...))
	select {
	case d := <-got:
		assert.Equal(t, "b00", d.ID, "the first of the batch first")
		require.NoError(t, d.Ack(ctx))
	case <-time.After(5 * time.Second):
		t.Fatal("a receiver waiting for the queue did not wake for the batch")
	}
	for i := 1; i < len(batch); i++ {
		d := receive(t, q)
		assert.Equal(t, batch[i].ID, d.ID, "equal due times keep the batch's order")
		require.NoError(t, d.Ack(ctx))
	}
	assert.Equal(t, Stats{}, stats(t, q))
	require.NoError(t, q.Enqueue(ctx), "an empty call is a no-op")
	assert.Equal(t, Stats{}, stats(t, q))
}

// A batch with an invalid message, or with two messages of one ID, is
// refused whole with an error wrapping ErrInvalidMessage: nothing is
// written.
func TestEnqueueBatchRefusedWhole(t *testing.T) {
	q, mock, _ := testQueue(t)
	ctx := context.Background()
	due := mock.Now().Add(time.Minute)
	ok := Message{ID: "ok", Due: due}
	for name, batch := range map[string][]Message{
		"an empty ID": {ok, {ID: "", Due: due}},
		"a long ID":   {ok, {ID: string(make([]byte, MaxIDLen+1)), Due: due}},
		"a repeat ID": {ok, {ID: "x", Due: due}, {ID: "x", Due: due.Add(time.Second)}},
		"a huge body": {ok, {ID: "big", Payload: make([]byte, MaxPayloadLen+1), Due: due}},
	} {
		err := q.Enqueue(ctx, batch...)
		assert.ErrorIs(t, err, ErrInvalidMessage, name)
		assert.Equal(t, Stats{}, stats(t, q), "%s: nothing written", name)
	}
}

// Receivers hear of a batch whatever its order of due times: the earliest
// wakes them, not the first.
func TestEnqueueBatchWakesForItsEarliest(t *testing.T) {
	q, mock, _ := testQueue(t)
	ctx := context.Background()
	got := waitingReceive(t, q)
	now := mock.Now()
	require.NoError(t, q.Enqueue(ctx,
		Message{ID: "later", Due: now.Add(time.Hour)},
		Message{ID: "soon", Due: now.Add(time.Second)}))
	mock.Add(time.Second)
	select {
	case d := <-got:
		assert.Equal(t, "soon", d.ID)
	case <-time.After(5 * time.Second):
		t.Fatal("the batch's earliest message did not wake the receiver")
	}
}

// An observer hears of each message of a batch.
func TestEnqueueBatchObserved(t *testing.T) {
	o := &enqueuedIDs{}
	q, _, _ := testQueue(t, WithObserver(o))
	require.NoError(t, q.Enqueue(context.Background(), Message{ID: "a"}, Message{ID: "b"}, Message{ID: "c"}))
	o.mu.Lock()
	defer o.mu.Unlock()
	assert.Equal(t, []string{"a", "b", "c"}, o.ids)
}

// enqueuedIDs records the IDs of the enqueued events it observes.
type enqueuedIDs struct {
	mu  sync.Mutex
	ids []string
}

func (o *enqueuedIDs) Observe(e Event) {
	if e.Kind == EventEnqueued {
		o.mu.Lock()
		o.ids = append(o.ids, e.ID)
		o.mu.Unlock()
	}
}
