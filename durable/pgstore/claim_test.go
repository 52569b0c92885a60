package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// TestClaimSkipsLocked: a claim does not wait for a message another
// transaction holds locked (here an EnqueueTx replacing it), and its
// NextDue is then a little after its horizon, not the due time that has
// passed, so that a queue does not claim again and again meanwhile.
func TestClaimSkipsLocked(t *testing.T) {
	pool := testPool(t)
	s := newStore(t)
	past := dbNow(t).Add(-time.Second)
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("a", past), msg("b", past)}))

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	require.NoError(t, s.EnqueueTx(ctx, tx, msg("a", past)))

	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := s.Claim(cctx, store.ClaimParams{Limit: 10, Lease: time.Minute, Ahead: 50 * time.Millisecond})
	require.NoError(t, err, "not blocked by the lock")
	require.Len(t, c.Leases, 1)
	assert.Equal(t, "b", c.Leases[0].ID)
	assert.False(t, c.NextDue.Before(c.Now.Add(50*time.Millisecond+lockedRetry)),
		"NextDue %v: after the horizon of %v", c.NextDue, c.Now)

	require.NoError(t, tx.Commit(ctx))
	c, err = s.Claim(ctx, store.ClaimParams{Limit: 10, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, c.Leases, 1)
	assert.Equal(t, "a", c.Leases[0].ID)
	assert.True(t, c.NextDue.IsZero())
}
