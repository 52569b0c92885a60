package storetest

import (
	"context"
	"fmt"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// A method given a ctx that is already cancelled or past its deadline
// writes nothing and returns an error wrapping ctx.Err().

// snapshot is what the store holds of ids, its Stats and its series, as
// the rules of writes that must write nothing compare them.
type snapshot struct {
	infos  map[string]string
	stats  store.Stats
	series []store.Series
}

func (e *env) snapshot(ids ...string) snapshot {
	e.t.Helper()
	sn := snapshot{infos: map[string]string{}, stats: e.stats()}
	sn.stats.NextDue = sn.stats.NextDue.UTC()
	for _, id := range ids {
		info, err := e.s.Get(e.ctx, id)
		if err != nil {
			require.ErrorIs(e.t, err, store.ErrNotFound, id)
			sn.infos[id] = "not found"
			continue
		}
		sn.infos[id] = fmtInfo(utc(info))
	}
	if k, ok := e.s.(store.SeriesKeeper); ok {
		list, err := k.ListSeries(e.ctx)
		if err == nil {
			for _, sr := range list {
				sr.Last, sr.Next = sr.Last.UTC(), sr.Next.UTC()
				sn.series = append(sn.series, sr)
			}
		}
	}
	return sn
}

func fmtInfo(info store.Info) string { return fmt.Sprintf("%+v", info) }

var contextRules = []rule{
	{"DoneWritesNothing", func(e *env) {
		e.enqueue(msg("pending", e.now().Add(time.Hour)), msg("handed", e.past()))
		handed := e.claimOne("handed", time.Hour)
		ahead := e.claimAhead("ahead", "v1")
		e.kill("dead")
		var (
			pauser, keeper bool
			step           store.SeriesStep
			sr             store.Series
		)
		if _, ok := e.s.(store.SeriesKeeper); ok && !e.unsupported() {
			keeper = true
			sr = e.advanceSeries(e.seriesStep("s", "fp", store.Series{}, e.now().Add(time.Hour)))
			step = e.seriesStep("s", "fp", sr, e.now().Add(2*time.Hour))
			step.Cancel = sr.Pending
		}
		if _, ok := e.s.(store.Pauser); ok && !e.pauseUnsupported() {
			pauser = true
		}
		all := []string{"pending", "handed", "ahead", "dead", "new", "u", sr.Pending, step.Message.ID}
		before := e.snapshot(all...)

		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		past, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancel2()
		for _, ctx := range []context.Context{cancelled, past} {
			calls := map[string]func() error{
				"Enqueue": func() error {
					return e.s.Enqueue(ctx, []store.Message{msg("new", e.past()), msg("pending", e.past())})
				},
				"Cancel": func() error { _, err := e.s.Cancel(ctx, "pending"); return err },
				"Claim": func() error {
					_, err := e.s.Claim(ctx, claimArgs{Limit: 10, Lease: time.Minute, Ahead: time.Hour})
					return err
				},
				"Confirm": func() error { return e.s.Confirm(ctx, store.ConfirmParams{Lease: ahead.Ref()}) },
				"Ack":     func() error { return e.s.Ack(ctx, handed.Ref()) },
				"Retry": func() error {
					return e.s.Retry(ctx, store.RetryParams{Lease: handed.Ref(), Dead: true, Error: "x"})
				},
				"Release": func() error { return e.s.Retry(ctx, store.RetryParams{Lease: handed.Ref()}) },
				"Extend": func() error {
					return e.s.Extend(ctx, store.ExtendParams{Lease: handed.Ref(), By: 2 * time.Hour})
				},
				"Requeue": func() error { return e.s.Requeue(ctx, store.RequeueParams{ID: "dead"}) },
			}
			if pauser {
				calls["SetPaused"] = func() error { return e.s.(store.Pauser).SetPaused(ctx, true) }
			}
			if keeper {
				calls["AdvanceSeries"] = func() error { _, _, err := e.s.(store.SeriesKeeper).AdvanceSeries(ctx, step); return err }
				calls["DeleteSeries"] = func() error { _, err := e.s.(store.SeriesKeeper).DeleteSeries(ctx, "s"); return err }
			}
			for name, call := range calls {
				require.ErrorIs(e.t, call(), ctx.Err(), "%s with a done ctx", name)
				require.Equal(e.t, before, e.snapshot(all...), "%s with a done ctx wrote nothing", name)
			}
		}
		// The lease claimed ahead was not confirmed: a Cancel takes it back.
		require.True(e.t, e.cancel("ahead"), "Confirm with a done ctx did not hand the lease out")
	}},
}
