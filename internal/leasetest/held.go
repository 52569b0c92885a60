package leasetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// HeldCostsNothing checks the rule of issue 37 on s, which holds no
// message: a lease claimed held and never confirmed is reported Held by
// Expired once it expires (a confirmed one is not), and a Retry with
// Unhanded takes back the attempt its Claim counted and keeps the
// LastError. wait lets the lease of lease length expire on s's clock
// (a sleep for a server, a mock clock's Add for another).
func HeldCostsNothing(t *testing.T, s store.Store, lease time.Duration, wait func()) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, s.Enqueue(ctx, []store.Message{{ID: "handed"}, {ID: "held"}, {ID: "confirmed"}}))
	c, err := s.Claim(ctx, store.ClaimParams{Limit: 3, Held: 2, Lease: lease})
	require.NoError(t, err)
	require.Len(t, c.Leases, 3)
	byID := map[string]*store.Lease{}
	for i := range c.Leases {
		byID[c.Leases[i].ID] = &c.Leases[i]
	}
	require.False(t, byID["handed"].Ahead)
	require.True(t, byID["held"].Ahead)
	require.True(t, byID["confirmed"].Ahead)
	require.NoError(t, s.Confirm(ctx, byID["confirmed"].Ref()))
	wait()

	e, err := s.Expired(ctx, 10)
	require.NoError(t, err)
	held := map[string]bool{}
	for _, l := range e.Leases {
		held[l.ID] = l.Held
	}
	assert.Equal(t, map[string]bool{"handed": false, "held": true, "confirmed": false}, held)

	require.NoError(t, s.Retry(ctx, store.RetryParams{Lease: byID["held"].Ref(), Expired: true, Unhanded: true}))
	info, err := s.Get(ctx, "held")
	require.NoError(t, err)
	assert.Equal(t, store.Pending, info.State)
	assert.Equal(t, 0, info.Attempt, "the claim's attempt taken back")
	assert.Empty(t, info.LastError)

	// A handed-out lease given back unhandled (its handler stopped) too;
	// its LastError stays as it was.
	require.NoError(t, s.Retry(ctx, store.RetryParams{Lease: byID["confirmed"].Ref(), Unhanded: true}))
	info, err = s.Get(ctx, "confirmed")
	require.NoError(t, err)
	assert.Equal(t, 0, info.Attempt)
	// Without Unhanded the attempt stays counted.
	require.NoError(t, s.Retry(ctx, store.RetryParams{Lease: byID["handed"].Ref(), Expired: true, Error: "lease expired"}))
	info, err = s.Get(ctx, "handed")
	require.NoError(t, err)
	assert.Equal(t, 1, info.Attempt)
	assert.Equal(t, "lease expired", info.LastError)
}
