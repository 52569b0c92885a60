package storetest

import (
	"errors"
	"fmt"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// The rules across two handles on one backend (Harness.Second), as two
// processes would have: each sees the other's writes at once.

// woke reports whether w receives within d.
func woke(w <-chan struct{}, d time.Duration) bool {
	select {
	case <-w:
		return true
	case <-time.After(d):
		return false
	}
}

// drain takes what w received, until a quiet moment of 200ms (at most
// 5s).
func drain(w <-chan struct{}) {
	for range 25 {
		if !woke(w, 200*time.Millisecond) {
			return
		}
	}
}

var handleRules = []rule{
	{"SeeEachOthersWrites", func(e *env) {
		o := e.second()
		e.enqueue(msg("a", e.past()))
		require.Equal(e.t, store.Pending, o.get("a").State)
		l := o.claimOne("a", time.Hour)
		require.Equal(e.t, store.InFlight, e.get("a").State)
		require.NoError(e.t, e.s.Extend(e.ctx, store.ExtendParams{Lease: l.Ref(), By: time.Hour}))
		e.ack(l)
		o.requireNotFound("a")
		o.requireCounts(0, 0, 0)
	}},
	{"ConfirmAndCancelAcross", func(e *env) {
		o := e.second()
		// Cancelled by the other handle: the holder's Confirm fails.
		l := e.claimAhead("a", "v1")
		require.True(e.t, o.cancel("a"))
		require.ErrorIs(e.t, e.s.Confirm(e.ctx, store.ConfirmParams{Lease: l.Ref()}), store.ErrLeaseLost)
		// Confirmed by the holder: the other handle's Cancel refuses.
		l = e.claimAhead("b", "v1")
		require.NoError(e.t, e.s.Confirm(e.ctx, store.ConfirmParams{Lease: l.Ref()}))
		_, err := o.s.Cancel(o.ctx, "b")
		require.ErrorIs(e.t, err, store.ErrInFlight, "confirmed on one handle: handed out for the other")
		o.ack(l)
		// Replaced by the other handle: the holder's Confirm fails.
		l = e.claimAhead("c", "v1")
		o.enqueue(msg("c", e.now().Add(time.Hour)))
		require.ErrorIs(e.t, e.s.Confirm(e.ctx, store.ConfirmParams{Lease: l.Ref()}), store.ErrLeaseLost)
		// Exactly one of a Confirm and a Cancel of the other handle wins.
		for i := range 50 {
			id := fmt.Sprintf("race%d", i)
			l := e.claimAhead(id, "v")
			var (
				confirmErr, cancelErr error
				found                 bool
			)
			race(func() { confirmErr = e.s.Confirm(e.ctx, store.ConfirmParams{Lease: l.Ref()}) }, func() { found, cancelErr = o.s.Cancel(o.ctx, id) })
			switch {
			case confirmErr == nil:
				require.ErrorIs(e.t, cancelErr, store.ErrInFlight, id)
				require.False(e.t, found)
				e.ack(l)
			case errors.Is(confirmErr, store.ErrLeaseLost):
				require.NoError(e.t, cancelErr, id)
				require.True(e.t, found, id)
			default:
				require.NoError(e.t, confirmErr)
			}
		}
		e.requireCounts(1, 0, 0)
	}},
	{"ClaimersWithAHorizonNeverShare", func(e *env) {
		e.claimRace([]*env{e, e.second()})
	}},
	{"PauseAcross", func(e *env) {
		if _, ok := e.s.(store.Pauser); !ok || e.pauseUnsupported() {
			e.t.Skip("the store cannot pause")
		}
		o := e.second()
		l := o.claimAhead("a", "v1")
		e.enqueue(msg("b", e.past()))
		e.setPaused(true)
		require.True(e.t, o.stats().Paused)
		c := o.claim(claimArgs{Limit: 1, Lease: time.Minute})
		require.True(e.t, c.Paused, "paused by the other handle")
		require.Empty(e.t, c.Leases)
		require.ErrorIs(e.t, o.s.Confirm(o.ctx, store.ConfirmParams{Lease: l.Ref()}), store.ErrPaused, "paused by the other handle")
		o.setPaused(false)
		require.False(e.t, e.stats().Paused)
		e.claimOne("b", time.Minute)
	}},
	{"SeriesStepsAcrossOneWins", func(e *env) {
		if _, ok := e.s.(store.SeriesKeeper); !ok || e.unsupported() {
			e.t.Skip("the store keeps no series")
		}
		o := e.second()
		sr := e.advanceSeries(e.seriesStep("s", "fp", store.Series{}, e.now().Add(time.Minute)))
		e.requireSeries(sr, o.stored("s"), "the other handle reads it")
		e.seriesRace([]*env{e, o}, sr)
	}},
	{"WakeupsAcross", func(e *env) {
		o := e.second()
		n, ok := o.s.(store.Notifier)
		if !ok {
			e.t.Skip("not a store.Notifier")
		}
		w, stop := n.Wakeups()
		defer stop()
		drain(w)
		e.enqueue(msg("a", e.now().Add(time.Hour)))
		require.True(e.t, woke(w, 5*time.Second), "a new earliest message on the other handle wakes")
		if _, ok := e.s.(store.Pauser); ok && !e.pauseUnsupported() {
			e.setPaused(true)
			drain(w)
			e.setPaused(false)
			require.True(e.t, woke(w, 5*time.Second), "a resume on the other handle wakes")
		}
	}},
	{"CloseOneLeavesTheOther", func(e *env) {
		o := e.second()
		e.enqueue(msg("a", e.past()))
		require.NoError(e.t, e.s.Close())
		o.claimOne("a", time.Minute)
		o.requireCounts(0, 1, 0)
	}},
}
