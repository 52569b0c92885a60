package storetest

import (
	"errors"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// The rules of SetPaused (see store.Store): a paused queue leases
// nothing and refuses the Confirm of a lease claimed ahead; every other
// method goes on; Stats says it. That the flag is kept with the messages
// (across handles and restarts) and that a resume wakes the receivers of
// other handles cannot be checked through a Harness, which makes one
// handle per store: each store's own tests check them.

// setPaused pauses or resumes the store.
func (e *env) setPaused(paused bool) {
	e.t.Helper()
	require.NoError(e.t, e.pauser().SetPaused(e.ctx, paused), "SetPaused(%v)", paused)
}

// pauseUnsupported reports whether the store says it cannot pause (an
// error wrapping store.ErrPauseUnsupported), and checks that it then
// changed nothing: not paused, and claims lease as usual.
func (e *env) pauseUnsupported() bool {
	e.t.Helper()
	if _, ok := e.s.(store.Pauser); !ok {
		return true // not a store.Pauser: nothing to check
	}
	err := e.pauser().SetPaused(e.ctx, true)
	if !errors.Is(err, store.ErrPauseUnsupported) {
		require.NoError(e.t, err, "SetPaused(true)")
		e.setPaused(false)
		return false
	}
	require.False(e.t, e.stats().Paused, "a store that cannot pause is not paused")
	e.enqueue(msg("u", e.past()))
	c := e.claim(claimArgs{Limit: 1, Lease: time.Minute})
	require.False(e.t, c.Paused)
	require.Equal(e.t, []string{"u"}, ids(c.Leases), "a store that cannot pause leases as usual")
	return true
}

// For a store that cannot pause, each rule checks that it says so (see
// pauseUnsupported) instead.
var pauseRules = unless((*env).pauseUnsupported, []rule{
	{"StartsUnpaused", func(e *env) {
		require.False(e.t, e.stats().Paused)
		e.enqueue(msg("a", e.past()))
		c := e.claim(claimArgs{Limit: 1, Lease: time.Minute})
		require.False(e.t, c.Paused)
		require.Len(e.t, c.Leases, 1)
	}},
	{"StatsSaysPaused", func(e *env) {
		e.setPaused(true)
		require.True(e.t, e.stats().Paused)
		e.setPaused(true) // again: no change
		require.True(e.t, e.stats().Paused)
		e.setPaused(false)
		require.False(e.t, e.stats().Paused)
		e.setPaused(false)
		require.False(e.t, e.stats().Paused)
	}},
	{"ClaimLeasesNothingWhilePaused", func(e *env) {
		e.enqueue(msg("a", e.past()))
		e.claimOne("a", time.Minute) // in flight before the pause
		e.enqueue(msg("b", e.past()), msg("c", e.now().Add(aheadOf)))
		e.setPaused(true)
		var c store.Claimed
		before, after := e.around(func() {
			var err error
			c, err = e.tryClaim(claimArgs{Limit: 10, Held: 1, Lease: time.Minute, Ahead: time.Minute})
			require.NoError(e.t, err)
		})
		require.True(e.t, c.Paused, "Claimed.Paused")
		require.Empty(e.t, c.Leases, "a paused queue leases nothing")
		e.requireBetween(c.Now, before, after, "Claimed.Now")
		e.requireInstant(e.get("a").Deadline, c.NextDeadline, "NextDeadline as usual: the lease in flight")
		e.requireCounts(2, 1, 0)
		require.Equal(e.t, store.Pending, e.get("b").State)

		e.setPaused(false)
		c = e.claim(claimArgs{Limit: 10, Lease: time.Minute, Ahead: time.Minute})
		require.False(e.t, c.Paused)
		e.requireOrder([]string{"b", "c"}, ids(c.Leases), "claim after the resume")
	}},
	{"WritesGoOnWhilePaused", func(e *env) {
		e.enqueue(msg("acked", e.past()), msg("extended", e.past()), msg("retried", e.past()),
			msg("released", e.past()))
		ls := map[string]store.Lease{}
		for _, l := range e.claim(claimArgs{Limit: 4, Lease: time.Minute}).Leases {
			ls[l.ID] = l
		}
		require.Len(e.t, ls, 4)
		e.enqueue(msg("expiring", e.past()))
		ls["expiring"] = e.claimOne("expiring", e.short())
		e.setPaused(true)

		e.enqueue(msg("new", e.past()))
		require.Equal(e.t, store.Pending, e.get("new").State)
		require.True(e.t, e.cancel("new"), "Cancel while paused")
		e.requireNotFound("new")
		require.NoError(e.t, e.s.Confirm(e.ctx, store.ConfirmParams{Lease: store.LeaseRef{ID: ls["acked"].ID, Token: ls["acked"].Token}}), "Confirm of a lease handed out")
		e.ack(ls["acked"])
		require.NoError(e.t, e.s.Extend(e.ctx, store.ExtendParams{Lease: store.LeaseRef{ID: "extended", Token: ls["extended"].Token}, By: time.Hour}), "Extend while paused")
		e.retry(ls["retried"], store.RetryParams{Error: "boom"})
		require.Equal(e.t, store.Pending, e.get("retried").State)
		require.NoError(e.t, e.s.Retry(e.ctx, store.RetryParams{Lease: store.LeaseRef{ID: "released", Token: ls["released"].Token}, After: 0}), "Release while paused")
		require.Equal(e.t, store.Pending, e.get("released").State)

		// Leases expire and are reaped as usual.
		e.waitPast(ls["expiring"].Deadline)
		r := e.reap(10, retryPolicy{MaxAttempts: 1})
		require.Equal(e.t, 1, r.Dead, "the expired lease is reaped")
		require.Equal(e.t, store.Dead, e.get("expiring").State)
		require.Equal(e.t, store.InFlight, e.get("extended").State, "the extended lease is kept")
		require.NoError(e.t, e.s.Requeue(e.ctx, store.RequeueParams{ID: "expiring", Due: time.Time{}}), "Requeue while paused")
		require.True(e.t, e.stats().Paused)
		require.Empty(e.t, e.claim(claimArgs{Limit: 10, Lease: time.Minute}).Leases)
	}},
	{"ConfirmRefusesClaimedAheadWhilePaused", func(e *env) {
		l := e.claimAhead("a", "x")
		e.setPaused(true)
		require.ErrorIs(e.t, e.s.Confirm(e.ctx, store.ConfirmParams{Lease: store.LeaseRef{ID: l.ID, Token: l.Token}}), store.ErrPaused,
			"a lease claimed ahead is not handed out while paused")
		info := e.get("a")
		require.Equal(e.t, store.InFlight, info.State, "Confirm changed nothing")
		require.Equal(e.t, 1, info.Attempt)
		// The holder gives it back.
		require.NoError(e.t, e.s.Retry(e.ctx, store.RetryParams{Lease: store.LeaseRef{ID: l.ID, Token: l.Token}, After: 0}))
		require.Equal(e.t, store.Pending, e.get("a").State)
		require.ErrorIs(e.t, e.s.Confirm(e.ctx, store.ConfirmParams{Lease: store.LeaseRef{ID: l.ID, Token: l.Token}}), store.ErrLeaseLost, "released")
		e.setPaused(false)
		c := e.claim(claimArgs{Limit: 1, Lease: time.Minute})
		require.Equal(e.t, []string{"a"}, ids(c.Leases), "claimed again after the resume")
		require.Equal(e.t, 2, c.Leases[0].Attempt, "the claim before the pause stays counted")
	}},
	{"ConfirmRefusesHeldWhilePaused", func(e *env) {
		held := e.claimHeld(time.Minute, time.Second, msg("a", e.now().Add(aheadOf)))[0]
		e.setPaused(true)
		require.ErrorIs(e.t, e.s.Confirm(e.ctx, store.ConfirmParams{Lease: store.LeaseRef{ID: held.ID, Token: held.Token}}), store.ErrPaused)
		e.setPaused(false)
		require.NoError(e.t, e.s.Confirm(e.ctx, store.ConfirmParams{Lease: store.LeaseRef{ID: held.ID, Token: held.Token}}), "after the resume, the lease is handed out")
		_, err := e.s.Cancel(e.ctx, held.ID)
		require.ErrorIs(e.t, err, store.ErrInFlight, "handed out: Cancel refuses")
	}},
	{"ConfirmedBeforePauseGoesOn", func(e *env) {
		l := e.claimAhead("a", "x")
		require.NoError(e.t, e.s.Confirm(e.ctx, store.ConfirmParams{Lease: store.LeaseRef{ID: l.ID, Token: l.Token}}))
		e.setPaused(true)
		require.NoError(e.t, e.s.Confirm(e.ctx, store.ConfirmParams{Lease: store.LeaseRef{ID: l.ID, Token: l.Token}}), "confirmed already: handed out")
		e.ack(l)
		e.requireCounts(0, 0, 0)
	}},
})
