package durable

import (
	"context"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable/memstore"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// TestHeldLeaseOfACrashedProcessCostsNothing: a process claimed two
// messages, handed one out and held the other, due later (Claim with
// Held 1), and died; the held one was never confirmed. When the leases expire, the queue that reaps
// gives the held one back with no attempt counted and no error text; the
// handed-out one counts its attempt and LeaseExpired.
func TestHeldLeaseOfACrashedProcessCostsNothing(t *testing.T) {
	mock := clock.NewMock()
	mock.Set(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	s := memstore.New(mock)
	ctx := context.Background()
	require.NoError(t, s.Enqueue(ctx, []store.Message{{ID: "handed", Due: mock.Now()}, {ID: "held", Due: mock.Now().Add(heldAhead)}}))
	c, err := s.Claim(ctx, store.ClaimParams{Limit: 2, Held: 1, Lease: 30 * time.Second, Ahead: time.Second})
	require.NoError(t, err)
	require.Len(t, c.Leases, 2)
	require.False(t, c.Leases[0].Ahead, "the first is handed out")
	require.True(t, c.Leases[1].Ahead, "the second, due later, is held")
	// The process dies here: nothing confirmed, acked or given back.

	q, err := New(s, WithClock(mock), withClaimAhead(0), WithBackoff(fixedBackoff), quietLogger())
	require.NoError(t, err)
	defer func() { assert.NoError(t, q.Close()) }()
	mock.Add(30*time.Second + heldAhead) // the leases expire; the queue reaps
	require.Eventually(t, func() bool {
		st, err := q.Stats(ctx)
		return err == nil && st.InFlight == 0
	}, 5*time.Second, time.Millisecond)

	held, err := q.Get(ctx, "held")
	require.NoError(t, err)
	assert.Equal(t, Pending, held.State)
	assert.Equal(t, 0, held.Attempt, "held, never handed out: no attempt")
	assert.Empty(t, held.LastError)
	handed, err := q.Get(ctx, "handed")
	require.NoError(t, err)
	assert.Equal(t, 1, handed.Attempt)
	assert.Equal(t, LeaseExpired, handed.LastError)

	d := receive(t, q)
	assert.Equal(t, "held", d.ID, "due at once; the other waits its back-off")
	assert.Equal(t, 1, d.Attempt)
	assert.Empty(t, d.LastError)
	require.NoError(t, d.Ack(ctx))
}

// TestFailedConfirmationCostsNothing: a held message whose confirmation
// fails (the store is down) is not handed out; when its lease expires it
// comes back at attempt 1 with no error text.
func TestFailedConfirmationCostsNothing(t *testing.T) {
	mock := clock.NewMock()
	mock.Set(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	s := newFaultStore(mock)
	ctx := context.Background()
	q, err := New(s, WithClock(mock), withClaimAhead(time.Second), quietLogger(), WithVisibilityTimeout(10*time.Second))
	require.NoError(t, err)
	defer func() { assert.NoError(t, q.Close()) }()
	enqueueSoon(t, q, mock, "a")
	ds, err := q.claimDue(ctx, func() (int, int) { return 1, 1 }) // held
	require.NoError(t, err)
	require.Len(t, ds, 1)
	require.True(t, ds[0].held)
	mock.Add(heldAhead) // due
	s.set(OpConfirm, true, false)
	_, err = q.deliver(ds[0])
	require.ErrorIs(t, err, errRevoked, "not handed out")
	s.set(OpConfirm, false, false)

	mock.Add(10 * time.Second)
	require.Eventually(t, func() bool {
		info, err := q.Get(ctx, "a")
		return err == nil && info.State == Pending
	}, 5*time.Second, time.Millisecond, "reaped at its deadline")
	d := receive(t, q)
	assert.Equal(t, 1, d.Attempt)
	assert.Empty(t, d.LastError)
}

// TestRunShutdownGivesTheAttemptBack: a handler that Run's shutdown stops
// (it returns its ctx's error) costs no attempt and leaves no error text,
// so that restarts never kill a slow job (WithMaxAttempts(1) here). A
// handler that fails on its own after the shutdown still counts.
func TestRunShutdownGivesTheAttemptBack(t *testing.T) {
	q, mock, _ := testQueue(t, WithMaxAttempts(1))
	ctx := context.Background()
	enqueueDueNow(t, q, mock, "slow", "failing")
	started := make(chan string, 2)
	stop := runInBackground(t, q, 2, func(hctx context.Context, d *Delivery) error {
		started <- d.ID
		<-hctx.Done()
		if d.ID == "failing" {
			return assert.AnError
		}
		return hctx.Err()
	})
	for range 2 {
		select {
		case <-started:
		case <-time.After(5 * time.Second):
			t.Fatal("the handlers did not start")
		}
	}
	require.NoError(t, stop())

	slow, err := q.Get(ctx, "slow")
	require.NoError(t, err)
	assert.Equal(t, Pending, slow.State, "not dead after its only attempt was stopped")
	assert.Equal(t, 0, slow.Attempt)
	assert.Empty(t, slow.LastError)
	assert.True(t, slow.Due.Equal(mock.Now()), "due at once: %v", slow.Due)

	failing, err := q.Get(ctx, "failing")
	require.NoError(t, err)
	assert.Equal(t, Dead, failing.State, "its own error: the attempt counts")
	assert.Equal(t, assert.AnError.Error(), failing.LastError)
}
