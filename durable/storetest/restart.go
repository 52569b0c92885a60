package storetest

import (
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// The rules across a restart (Harness.Reopen): what a store held when it
// was closed is there when its backend is opened again.

var restartRules = []rule{
	{"KeepsEveryState", func(e *env) {
		n := e.now()
		e.enqueue(msg("pending", n.Add(time.Hour)))
		e.enqueue(msg("retried", e.past()))
		e.retry(e.claimOne("retried", time.Minute), store.RetryParams{After: time.Hour, Error: "boom"})
		e.enqueue(msg("inflight", e.past()))
		l := e.claimOne("inflight", time.Hour)
		e.kill("dead")
		all := []string{"pending", "retried", "inflight", "dead"}
		before := e.snapshot(all...)
		e.reopen()
		require.Equal(e.t, before, e.snapshot(all...), "everything, as it was")

		// The lease in flight goes on, with its token.
		_, err := e.s.Cancel(e.ctx, "inflight")
		require.ErrorIs(e.t, err, store.ErrInFlight, "handed out before the restart")
		require.NoError(e.t, e.s.Extend(e.ctx, store.ExtendParams{Lease: l.Ref(), By: time.Hour}))
		require.NoError(e.t, e.s.Confirm(e.ctx, store.ConfirmParams{Lease: l.Ref()}))
		e.ack(l)
		e.requireCounts(2, 0, 1)
	}},
	{"OrderAndTokensGoOn", func(e *env) {
		due := e.past()
		e.enqueue(msg("t", due))
		old := e.claimOne("t", time.Minute)
		e.enqueue(msg("c", due), msg("a", due))
		e.reopen()
		e.enqueue(msg("b", due), msg("t", due.Add(time.Millisecond)))
		ls := e.claimAll(time.Minute)
		e.requireOrder([]string{"c", "a", "b", "t"}, ids(ls), "equal due times in the order of the writes, across the restart")
		for _, l := range ls {
			if l.ID == "t" {
				require.Greater(e.t, l.Token, old.Token, "the message's token after the restart is greater than before")
			}
		}
	}},
	{"LeaseExpiresAfter", func(e *env) {
		e.enqueue(msg("a", e.past()))
		l := e.claimOne("a", 50*time.Millisecond)
		e.reopen()
		e.waitPast(l.Deadline)
		x := e.expired(10)
		require.Len(e.t, x.Leases, 1, "the lease of before the restart expires")
		require.Equal(e.t, l.Token, x.Leases[0].Token)
		e.requireInstant(l.Deadline, x.Leases[0].Deadline, "its deadline")
		require.Equal(e.t, 1, e.reap(10, noBackoff).Returned)
		require.Equal(e.t, 2, e.claimOne("a", time.Minute).Attempt)
	}},
	{"LeaseClaimedAhead", func(e *env) {
		// A lease claimed ahead and not confirmed when the store closed:
		// its holder was in the process that closed it. The store opened
		// again either still holds it back (a Cancel takes it, and its
		// Confirm fails) or counts it handed out (Cancel says ErrInFlight,
		// and its token acks); either way it is still the message's.
		l := e.claimAhead("a", "v1")
		e.reopen()
		require.Equal(e.t, store.InFlight, e.get("a").State)
		found, err := e.s.Cancel(e.ctx, "a")
		if err == nil {
			require.True(e.t, found, "taken back")
			require.ErrorIs(e.t, e.s.Confirm(e.ctx, store.ConfirmParams{Lease: l.Ref()}), store.ErrLeaseLost)
			return
		}
		require.ErrorIs(e.t, err, store.ErrInFlight)
		e.ack(l)
	}},
	{"KeepsPause", func(e *env) {
		if _, ok := e.s.(store.Pauser); !ok || e.pauseUnsupported() {
			e.t.Skip("the store cannot pause")
		}
		e.setPaused(true)
		e.enqueue(msg("a", e.past()))
		e.reopen()
		require.True(e.t, e.stats().Paused, "paused across the restart")
		c := e.claim(claimArgs{Limit: 1, Lease: time.Minute})
		require.True(e.t, c.Paused)
		require.Empty(e.t, c.Leases)
		e.setPaused(false)
		e.reopen()
		require.False(e.t, e.stats().Paused, "resumed across the restart")
		e.claimOne("a", time.Minute)
	}},
	{"KeepsSeries", func(e *env) {
		if _, ok := e.s.(store.SeriesKeeper); !ok || e.unsupported() {
			e.t.Skip("the store keeps no series")
		}
		p := e.seriesStep("s", "fp", store.Series{}, e.now().Add(time.Hour+time.Nanosecond))
		p.Next = p.Last.Add(time.Minute + time.Nanosecond)
		sr := e.advanceSeries(p)
		e.reopen()
		e.requireSeries(sr, e.stored("s"), "across the restart, to the nanosecond")
		e.advanceSeries(e.seriesStep("s", "fp", sr, sr.Next))
	}},
}
