package storetest

import (
	"fmt"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// The time rules: instants within store.MinTime and store.MaxTime are
// kept to the nanosecond, or to the microsecond rounded up (a due time is
// never rounded down), and both ends of the range are kept exactly.

// requireKeptDue checks that the store kept due as got: exactly, or
// rounded up to the microsecond.
func (e *env) requireKeptDue(due, got time.Time, what string) {
	e.t.Helper()
	up := due.Truncate(time.Microsecond)
	if !up.Equal(due) {
		up = up.Add(time.Microsecond)
	}
	require.True(e.t, got.Equal(due) || got.Equal(up), "%s: due %v kept as %v: neither to the nanosecond nor rounded up to the microsecond", what, due, got)
}

var timeRules = []rule{
	{"SubMicrosecondDuesNeverRoundDown", func(e *env) {
		base := e.now().Add(e.short())
		var want []string
		for i, ns := range []time.Duration{1, 499, 500, 999} {
			id := fmt.Sprintf("ns%03d", ns)
			due := base.Add(time.Duration(i)*time.Millisecond + ns)
			e.enqueue(msg(id, due))
			e.requireKeptDue(due, e.get(id).Due, id)
			want = append(want, id)
		}
		e.kill("r")
		due := base.Add(5*time.Millisecond + 1)
		require.NoError(e.t, e.s.Requeue(e.ctx, store.RequeueParams{ID: "r", Due: due}))
		e.requireKeptDue(due, e.get("r").Due, "Requeue")
		want = append(want, "r")

		// Never handed out before its due time (see env.claim).
		e.waitPast(e.get("r").Due)
		e.requireOrder(want, ids(e.claimAll(time.Minute)), "by due time")
		if e.mock {
			due := e.nowFn().Add(time.Second + 1)
			e.enqueue(msg("soon", due))
			e.advance(due.Sub(e.nowFn()) - time.Nanosecond)
			require.Empty(e.t, e.claim(claimArgs{Limit: 1, Lease: time.Minute}).Leases, "a nanosecond before its due time")
			e.waitPast(e.get("soon").Due)
			e.claimOne("soon", time.Minute)
		}
	}},
	{"BothEndsOfTheRange", func(e *env) {
		e.enqueue(msg("max", store.MaxTime), msg("min", store.MinTime))
		require.True(e.t, store.MinTime.Equal(e.get("min").Due), "MinTime kept: %v", e.get("min").Due)
		require.True(e.t, store.MaxTime.Equal(e.get("max").Due), "MaxTime kept: %v", e.get("max").Due)
		require.True(e.t, store.MinTime.Equal(e.stats().NextDue), "Stats.NextDue")
		infos, _ := e.listOnce(store.Pending, 1, nil)
		require.Len(e.t, infos, 2)
		require.Equal(e.t, []string{"min", "max"}, []string{infos[0].ID, infos[1].ID}, "List by due time")

		c := e.claim(claimArgs{Limit: 10, Lease: time.Minute, Ahead: time.Hour})
		require.Equal(e.t, []string{"min"}, ids(c.Leases), "the message due at MinTime, long due")
		// A hint, which a store may give early (Now at worst), never late.
		require.False(e.t, c.NextDue.IsZero() || c.NextDue.After(store.MaxTime) || c.NextDue.Before(c.Now),
			"NextDue %v: MaxTime, or earlier but not before the claim's Now %v", c.NextDue, c.Now)
		require.True(e.t, store.MinTime.Equal(c.Leases[0].Due), "the lease's Due")

		e.retry(c.Leases[0], store.RetryParams{Dead: true})
		require.NoError(e.t, e.s.Requeue(e.ctx, store.RequeueParams{ID: "min", Due: store.MaxTime}))
		require.True(e.t, store.MaxTime.Equal(e.get("min").Due), "Requeue to MaxTime")
		infos, _ = e.listOnce(store.Pending, 1, nil)
		require.Equal(e.t, []string{"max", "min"}, []string{infos[0].ID, infos[1].ID}, "equal due times at MaxTime, by write")
		require.True(e.t, e.cancel("max"))

		if _, ok := e.s.(store.SeriesKeeper); ok && !e.unsupported() {
			p := e.seriesStep("s", "fp", store.Series{}, store.MinTime)
			p.Next = store.MaxTime
			sr := e.advanceSeries(p)
			e.requireSeries(store.Series{Name: "s", Fingerprint: "fp", Last: store.MinTime, Next: store.MaxTime, Pending: p.Message.ID}, e.stored("s"), "series at both ends")
			e.requireSeries(sr, e.stored("s"), "returned as stored")
		}
	}},
}
