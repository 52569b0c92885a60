package mysqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// begin starts a transaction on the shared *sql.DB, rolled back when the
// test ends if it is still open.
func begin(t *testing.T) *sql.Tx {
	t.Helper()
	tx, err := testDBHandle(t).BeginTx(ctx, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback() })
	return tx
}

// TestOrderTransaction: a message written by a transaction that rolls
// back is never delivered; one written by a transaction that commits is
// delivered once, not before its due time on the database's clock.
func TestOrderTransaction(t *testing.T) {
	s := newStore(t)
	q := newQueue(t, s)
	due := dbNow(t).Add(300 * time.Millisecond)

	tx := begin(t)
	require.NoError(t, s.EnqueueTx(ctx, tx, msg("rolled-back", due)))
	require.NoError(t, tx.Rollback())

	tx = begin(t)
	require.NoError(t, s.EnqueueTx(ctx, tx, msg("committed", due)))
	info, err := s.Get(ctx, "committed")
	require.ErrorIs(t, err, store.ErrNotFound, "not visible before the commit: %+v", info)
	require.NoError(t, tx.Commit())

	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	d, err := q.Receive(rctx)
	require.NoError(t, err)
	now := dbNow(t)
	require.Equal(t, "committed", d.ID)
	require.False(t, now.Before(due), "received at %v on the database's clock, before its due time %v", now, due)
	require.NoError(t, d.Ack(ctx))

	short, cancel2 := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel2()
	_, err = q.Receive(short)
	require.ErrorIs(t, err, context.DeadlineExceeded, "delivered once")
	_, err = s.Get(ctx, "rolled-back")
	require.ErrorIs(t, err, store.ErrNotFound, "the rolled-back message does not exist")
}

// TestEnqueueTxRefuses: a transaction already ended, a batch with an ID
// twice, an invalid message.
func TestEnqueueTxRefuses(t *testing.T) {
	s := newStore(t)
	tx := begin(t)
	require.NoError(t, tx.Commit())
	require.ErrorIs(t, s.EnqueueTx(ctx, tx, msg("a", time.Time{})), ErrTxDone)

	tx = begin(t)
	require.ErrorIs(t, s.EnqueueTx(ctx, tx, msg("a", time.Time{}), msg("a", time.Time{})), store.ErrInvalidMessage)
	require.ErrorIs(t, s.EnqueueTx(ctx, tx, durable.Message{}), store.ErrInvalidMessage)
	require.NoError(t, tx.Commit())
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	require.Zero(t, st.Pending, "nothing written")
}

// TestEnqueueTxLarge: a batch of several statements in the caller's
// transaction keeps the batch's order among equal due times.
func TestEnqueueTxLarge(t *testing.T) {
	s := newStore(t)
	const n = 2*maxEnqueueRows + 10
	due := time.Now().Add(-time.Second)
	msgs := make([]store.Message, n)
	for i := range msgs {
		msgs[i] = store.Message{ID: fmt.Sprintf("%05d", n-i), Due: due} // IDs against the batch's order
	}
	tx := begin(t)
	require.NoError(t, s.EnqueueTx(ctx, tx, msgs...))
	require.NoError(t, tx.Commit())
	var got []string
	for len(got) < n {
		c, err := s.Claim(ctx, store.ClaimParams{Limit: MaxClaim, Lease: time.Minute})
		require.NoError(t, err)
		require.NotEmpty(t, c.Leases)
		for _, l := range c.Leases {
			got = append(got, l.ID)
		}
	}
	for i := range msgs {
		require.Equal(t, msgs[i].ID, got[i], "claim %d", i)
	}
}

// TestRetention: a death trims the dead letters to the queue's retention,
// oldest first.
func TestRetention(t *testing.T) {
	s := newStore(t)
	for i := range 5 {
		id := fmt.Sprintf("d%d", i)
		require.NoError(t, s.Enqueue(ctx, []store.Message{{ID: id}}))
		c, err := s.Claim(ctx, store.ClaimParams{Limit: 1, Lease: time.Minute})
		require.NoError(t, err)
		require.Len(t, c.Leases, 1)
		require.NoError(t, s.Retry(ctx, store.RetryParams{Lease: c.Leases[0].Ref(), Dead: true,
			Retention: store.Retention{MaxCount: 3}}))
	}
	dead, _, err := s.List(ctx, store.ListParams{State: store.Dead, Limit: 10})
	require.NoError(t, err)
	var ids []string
	for _, d := range dead {
		ids = append(ids, d.ID)
	}
	require.Equal(t, []string{"d2", "d3", "d4"}, ids)

	// By age: those dead longer than MaxAge go at the next death.
	require.NoError(t, s.Enqueue(ctx, []store.Message{{ID: "last"}}))
	c, err := s.Claim(ctx, store.ClaimParams{Limit: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, c.Leases, 1)
	require.NoError(t, s.Retry(ctx, store.RetryParams{Lease: c.Leases[0].Ref(), Dead: true,
		Retention: store.Retention{MaxAge: time.Microsecond}}))
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, st.Dead, "only the last death is kept")
}
