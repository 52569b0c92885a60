// Package storetest checks the parts of the durable.Store contract that
// every store must keep alike, for the tests of each store (the embedded
// file and Redis), against a store the test opened on an empty queue.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// aheadOf is how far in the future the messages of the claim-ahead tests
// are due: Claim takes them with a horizon of a minute, so that their
// leases are claimed ahead whatever the store's clock does meanwhile.
const aheadOf = 10 * time.Second

// claimOneAhead enqueues id with payload, due aheadOf after now, claims
// it ahead and returns its lease.
func claimOneAhead(t *testing.T, s durable.Store, now time.Time, id, payload string) durable.Lease {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, s.Enqueue(ctx, []durable.Message{{ID: id, Payload: []byte(payload), Due: now.Add(aheadOf)}}))
	c, err := s.Claim(ctx, 1, 0, time.Minute, time.Minute)
	require.NoError(t, err)
	require.Len(t, c.Leases, 1)
	l := c.Leases[0]
	require.Equal(t, id, l.ID)
	require.True(t, l.Ahead, "a message due after now is claimed ahead")
	return l
}

// ClaimAhead checks how a lease claimed ahead is handed out (Confirm) or
// taken back (Enqueue, Cancel). now returns the store's clock.
func ClaimAhead(t *testing.T, s durable.Store, now func() time.Time) {
	ctx := context.Background()

	t.Run("CancelTakesBack", func(t *testing.T) {
		l := claimOneAhead(t, s, now(), "cancel", "v1")
		found, err := s.Cancel(ctx, "cancel")
		require.NoError(t, err, "a message no consumer was handed is cancelled")
		assert.True(t, found)
		require.ErrorIs(t, s.Confirm(ctx, "cancel", l.Token), durable.ErrLeaseLost)
		requireEmpty(t, s)
	})

	t.Run("ConfirmHandsOut", func(t *testing.T) {
		l := claimOneAhead(t, s, now(), "confirm", "v1")
		require.NoError(t, s.Confirm(ctx, "confirm", l.Token))
		require.NoError(t, s.Confirm(ctx, "confirm", l.Token), "confirming again is harmless")
		found, err := s.Cancel(ctx, "confirm")
		require.ErrorIs(t, err, durable.ErrInFlight, "handed out: no longer cancelled")
		assert.False(t, found)
		require.NoError(t, s.Ack(ctx, "confirm", l.Token))
		requireEmpty(t, s)
	})

	t.Run("UpsertTakesBack", func(t *testing.T) {
		old := claimOneAhead(t, s, now(), "upsert", "v1")
		l := claimOneAhead(t, s, now(), "upsert", "v2")
		require.ErrorIs(t, s.Confirm(ctx, "upsert", old.Token), durable.ErrLeaseLost, "the replaced version is never handed out")
		assert.Equal(t, "v2", string(l.Payload))
		assert.Equal(t, 1, l.Attempt, "the new version starts at attempt 1")
		require.NoError(t, s.Confirm(ctx, "upsert", l.Token))
		require.NoError(t, s.Ack(ctx, "upsert", l.Token))
		requireEmpty(t, s)
	})

	t.Run("DueNowIsHandedOutByClaim", func(t *testing.T) {
		require.NoError(t, s.Enqueue(ctx, []durable.Message{{ID: "now"}}))
		c, err := s.Claim(ctx, 1, 0, time.Minute, time.Minute)
		require.NoError(t, err)
		require.Len(t, c.Leases, 1)
		assert.False(t, c.Leases[0].Ahead)
		_, err = s.Cancel(ctx, "now")
		require.ErrorIs(t, err, durable.ErrInFlight)
		require.NoError(t, s.Confirm(ctx, "now", c.Leases[0].Token), "a current lease confirms")
		require.NoError(t, s.Ack(ctx, "now", c.Leases[0].Token))
		require.ErrorIs(t, s.Confirm(ctx, "now", c.Leases[0].Token), durable.ErrLeaseLost)
	})

	t.Run("DueSoonCountsWhatIsLeft", func(t *testing.T) {
		n := now()
		require.NoError(t, s.Enqueue(ctx, []durable.Message{
			{ID: "soon1"}, {ID: "soon2", Due: n.Add(aheadOf)}, {ID: "soon3", Due: n.Add(aheadOf)},
			{ID: "later", Due: n.Add(time.Hour)},
		}))
		c, err := s.Claim(ctx, 1, 0, time.Minute, time.Minute)
		require.NoError(t, err)
		require.Len(t, c.Leases, 1)
		assert.Equal(t, 2, c.DueSoon, "two more due within the minute; the one due in an hour is not counted")
		c2, err := s.Claim(ctx, 2, 0, time.Minute, time.Minute)
		require.NoError(t, err)
		require.Len(t, c2.Leases, 2)
		assert.Zero(t, c2.DueSoon)
		for _, l := range append(c.Leases, c2.Leases...) {
			require.NoError(t, s.Ack(ctx, l.ID, l.Token))
		}
		found, err := s.Cancel(ctx, "later")
		require.NoError(t, err)
		require.True(t, found)
		requireEmpty(t, s)
	})

	t.Run("ReleaseThenConfirmFails", func(t *testing.T) {
		l := claimOneAhead(t, s, now(), "release", "v1")
		dead, err := s.Retry(ctx, "release", l.Token, 0, 100, "")
		require.NoError(t, err)
		assert.False(t, dead)
		require.ErrorIs(t, s.Confirm(ctx, "release", l.Token), durable.ErrLeaseLost)
		found, err := s.Cancel(ctx, "release")
		require.NoError(t, err)
		assert.True(t, found)
	})
}

// ClaimHeld checks a Claim with held leases (see Store.Claim): at most
// limit-held of the messages due are handed out by the claim, earliest
// first, exactly that many if exact (a store may hand out fewer, as one
// with shards does); the others wait for Confirm, and an Enqueue or
// Cancel before it takes them back.
func ClaimHeld(t *testing.T, s durable.Store, exact bool) {
	ctx := context.Background()
	var msgs []durable.Message
	for i := range 6 {
		msgs = append(msgs, durable.Message{ID: fmt.Sprintf("h%d", i), Payload: []byte("v1")})
	}
	require.NoError(t, s.Enqueue(ctx, msgs))
	c, err := s.Claim(ctx, 6, 4, time.Minute, 0)
	require.NoError(t, err)
	require.Len(t, c.Leases, 6)
	var handed, held []durable.Lease
	for _, l := range c.Leases {
		if l.Ahead {
			held = append(held, l)
		} else {
			handed = append(handed, l)
		}
	}
	require.LessOrEqual(t, len(handed), 2, "at most limit-held handed out by the claim")
	if exact {
		require.Len(t, handed, 2)
		assert.Equal(t, []string{"h0", "h1"}, []string{handed[0].ID, handed[1].ID}, "the earliest are handed out")
	}
	for _, l := range handed {
		_, err := s.Cancel(ctx, l.ID)
		require.ErrorIs(t, err, durable.ErrInFlight, "%s: handed out by the claim", l.ID)
		require.NoError(t, s.Ack(ctx, l.ID, l.Token))
	}

	found, err := s.Cancel(ctx, held[0].ID)
	require.NoError(t, err, "a held message no consumer was handed is cancelled")
	assert.True(t, found)
	require.ErrorIs(t, s.Confirm(ctx, held[0].ID, held[0].Token), durable.ErrLeaseLost)

	require.NoError(t, s.Enqueue(ctx, []durable.Message{{ID: held[1].ID, Payload: []byte("v2")}}))
	require.ErrorIs(t, s.Confirm(ctx, held[1].ID, held[1].Token), durable.ErrLeaseLost, "the replaced version is never handed out")

	for _, l := range held[2:] {
		require.NoError(t, s.Confirm(ctx, l.ID, l.Token))
		_, err := s.Cancel(ctx, l.ID)
		require.ErrorIs(t, err, durable.ErrInFlight, "%s: confirmed, so handed out", l.ID)
		require.NoError(t, s.Ack(ctx, l.ID, l.Token))
	}

	c2, err := s.Claim(ctx, 6, 0, time.Minute, 0)
	require.NoError(t, err)
	require.Len(t, c2.Leases, 1)
	assert.Equal(t, held[1].ID, c2.Leases[0].ID)
	assert.Equal(t, "v2", string(c2.Leases[0].Payload))
	assert.False(t, c2.Leases[0].Ahead, "held 0: handed out by the claim")
	require.NoError(t, s.Ack(ctx, c2.Leases[0].ID, c2.Leases[0].Token))
	requireEmpty(t, s)
}

// ConfirmRace races, for each of n messages claimed ahead, a Confirm
// against a Cancel, and checks that exactly one wins: either the message
// was handed out and the Cancel answers ErrInFlight, or it was cancelled
// and the Confirm answers ErrLeaseLost.
func ConfirmRace(t *testing.T, s durable.Store, now func() time.Time, n int) {
	ctx := context.Background()
	confirmed, cancelled := 0, 0
	for i := range n {
		id := fmt.Sprintf("race%d", i)
		l := claimOneAhead(t, s, now(), id, "v")
		var (
			wg                    sync.WaitGroup
			confirmErr, cancelErr error
			found                 bool
		)
		start := make(chan struct{})
		wg.Go(func() { <-start; confirmErr = s.Confirm(ctx, id, l.Token) })
		wg.Go(func() { <-start; found, cancelErr = s.Cancel(ctx, id) })
		close(start)
		wg.Wait()
		switch {
		case confirmErr == nil:
			require.ErrorIs(t, cancelErr, durable.ErrInFlight, "%s: confirmed, then cancelled", id)
			require.False(t, found)
			require.NoError(t, s.Ack(ctx, id, l.Token))
			confirmed++
		case errors.Is(confirmErr, durable.ErrLeaseLost):
			require.NoError(t, cancelErr, "%s: neither won", id)
			require.True(t, found, "%s: neither won", id)
			cancelled++
		default:
			require.NoError(t, confirmErr)
		}
	}
	requireEmpty(t, s)
	t.Logf("%d confirmed first, %d cancelled first", confirmed, cancelled)
}

func requireEmpty(t *testing.T, s durable.Store) {
	t.Helper()
	st, err := s.Stats(context.Background())
	require.NoError(t, err)
	require.Equal(t, 0, st.Pending+st.InFlight+st.Dead, "%+v", st)
}

// Kill enqueues each of ids, due now, and makes it die by failing its only
// attempt, with the error text "killed".
func Kill(t *testing.T, s durable.Store, ids ...string) {
	t.Helper()
	ctx := context.Background()
	for _, id := range ids {
		require.NoError(t, s.Enqueue(ctx, []durable.Message{{ID: id, Payload: []byte("p")}}))
		c, err := s.Claim(ctx, 1, 0, time.Minute, 0)
		require.NoError(t, err)
		require.Len(t, c.Leases, 1)
		dead, err := s.Retry(ctx, id, c.Leases[0].Token, 0, 1, "killed")
		require.NoError(t, err)
		require.True(t, dead)
	}
}
