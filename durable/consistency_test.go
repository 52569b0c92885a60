package durable

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mockBoltStore opens a store in a fresh file on a mock clock set to a
// round date, and closes it at the end of the test.
func mockBoltStore(t *testing.T) (*BoltStore, *clock.Mock) {
	t.Helper()
	mock := clock.NewMock()
	mock.Set(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	s, err := OpenBoltStore(filepath.Join(t.TempDir(), "q.db"), WithClock(mock))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	return s, mock
}

// sharedStoreQueues returns two queues over one BoltStore, on a mock
// clock, claiming ahead: what two processes sharing a Redis do, in one
// process.
func sharedStoreQueues(t *testing.T, opts ...Option) (q1, q2 *Queue, mock *clock.Mock) {
	t.Helper()
	s, mock := mockBoltStore(t)
	var err error
	opts = append([]Option{WithClock(mock), WithBackoff(fixedBackoff), withClaimAhead(claimAhead)}, opts...)
	q1, err = New(s, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, q1.Close()) })
	q2, err = New(s, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, q2.Close()) })
	return q1, q2, mock
}

// TestCancelByAnotherQueueOfAMessageClaimedAhead: the order paid and
// cancelled 30ms before its close is due is not closed, although another
// queue holds it.
func TestCancelByAnotherQueueOfAMessageClaimedAhead(t *testing.T) {
	q1, q2, mock := sharedStoreQueues(t)
	ctx := context.Background()
	require.NoError(t, q2.Enqueue(ctx, Message{ID: "close-order", Due: mock.Now().Add(40 * time.Millisecond)}))
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := receiveAhead(t, q1, rctx)
	mock.Add(10 * time.Millisecond)
	found, err := q2.Cancel(ctx, "close-order")
	require.NoError(t, err, "no consumer has been handed it")
	assert.True(t, found)
	mock.Add(claimAhead)
	require.Eventually(t, func() bool {
		q1.mu.Lock()
		defer q1.mu.Unlock()
		return len(q1.ahead) == 0 && q1.waiting > 0
	}, 5*time.Second, time.Millisecond, "the holder gave up the cancelled message and waits for another")
	cancel()
	r := <-got
	require.ErrorIs(t, r.err, context.Canceled, "handed out %+v", r.d)
	assert.Equal(t, Stats{}, stats(t, q1))
}

// TestUpsertByAnotherQueueOfAMessageClaimedAhead: the holder of the old
// version hands out the new one, at attempt 1, and never the old.
func TestUpsertByAnotherQueueOfAMessageClaimedAhead(t *testing.T) {
	q1, q2, mock := sharedStoreQueues(t)
	ctx := context.Background()
	due := mock.Now().Add(40 * time.Millisecond)
	require.NoError(t, q2.Enqueue(ctx, Message{ID: "a", Payload: []byte("v1"), Due: due}))
	got := receiveAhead(t, q1, ctx)
	mock.Add(37 * time.Millisecond)
	require.NoError(t, q2.Enqueue(ctx, Message{ID: "a", Payload: []byte("v2"), Due: due}))
	mock.Add(3 * time.Millisecond)
	select {
	case r := <-got:
		require.NoError(t, r.err)
		assert.Equal(t, "v2", string(r.d.Payload), "the replaced version is never handed out")
		assert.Equal(t, 1, r.d.Attempt)
		require.NoError(t, r.d.Ack(ctx))
	case <-time.After(5 * time.Second):
		t.Fatal("the new version was not delivered")
	}
	assert.Equal(t, Stats{}, stats(t, q1))
}

// TestCancelAfterHandOutIsInFlight: once handed out, a message is the
// consumer's: Cancel answers ErrInFlight.
func TestCancelAfterHandOutIsInFlight(t *testing.T) {
	q1, q2, mock := sharedStoreQueues(t)
	ctx := context.Background()
	require.NoError(t, q2.Enqueue(ctx, Message{ID: "a", Due: mock.Now().Add(40 * time.Millisecond)}))
	got := receiveAhead(t, q1, ctx)
	mock.Add(40 * time.Millisecond)
	r := <-got
	require.NoError(t, r.err)
	_, err := q2.Cancel(ctx, "a")
	require.ErrorIs(t, err, ErrInFlight)
	require.NoError(t, r.d.Ack(ctx))
}

// enqueueHookStore runs afterWrite once its Enqueue has written, before
// it returns: what a producer paused after the store's reply sees.
type enqueueHookStore struct {
	Store
	afterWrite func()
}

func (s *enqueueHookStore) Enqueue(ctx context.Context, msgs []Message) error {
	err := s.Store.Enqueue(ctx, msgs)
	if err == nil && s.afterWrite != nil {
		s.afterWrite()
	}
	return err
}

// TestEnqueueDoesNotRevokeItsOwnWrite: a receiver of the same queue claims
// the new message ahead between the write and the return of Enqueue; it
// still hands it out at its due time, at attempt 1.
func TestEnqueueDoesNotRevokeItsOwnWrite(t *testing.T) {
	bs, mock := mockBoltStore(t)
	s := &enqueueHookStore{Store: bs}
	q, err := New(s, WithClock(mock), withClaimAhead(claimAhead))
	require.NoError(t, err)
	defer q.Close()
	ctx := context.Background()
	due := mock.Now().Add(30 * time.Millisecond)
	var got <-chan received
	s.afterWrite = func() { got = receiveAhead(t, q, ctx) }
	require.NoError(t, q.Enqueue(ctx, Message{ID: "a", Payload: []byte("v1"), Due: due}))
	s.afterWrite = nil
	mock.Add(30 * time.Millisecond)
	select {
	case r := <-got:
		require.NoError(t, r.err)
		assert.Equal(t, "v1", string(r.d.Payload))
		assert.Equal(t, 1, r.d.Attempt, "not revoked by its own Enqueue")
		require.NoError(t, r.d.Ack(ctx))
	case <-time.After(5 * time.Second):
		t.Fatal("the message claimed during its Enqueue was not handed out at its due time")
	}
}

// TestLateAckAfterReapIsLeaseLost: the queue reaps a lease at its
// deadline, so an Ack after it returns ErrLeaseLost and the message comes
// back (see Delivery.Ack).
func TestLateAckAfterReapIsLeaseLost(t *testing.T) {
	q, mock, _ := testQueue(t, WithVisibilityTimeout(time.Second))
	ctx := context.Background()
	require.NoError(t, q.Enqueue(ctx, Message{ID: "a"}))
	d := receive(t, q)
	mock.Add(time.Second)
	require.Eventually(t, func() bool { return stats(t, q).Pending == 1 }, 5*time.Second, time.Millisecond, "reaped at the deadline")
	require.ErrorIs(t, d.Ack(ctx), ErrLeaseLost)
	mock.Add(time.Second) // the back-off of attempt 1
	d2 := receive(t, q)
	assert.Equal(t, 2, d2.Attempt)
	require.NoError(t, d2.Ack(ctx))
}
