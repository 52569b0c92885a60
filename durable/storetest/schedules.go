package storetest

import (
	"errors"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/stretchr/testify/require"
)

// The series of durable.Queue.Schedule: AdvanceSeries is a compare-and-set
// of a series' state together with its message, Series and ListSeries
// read, DeleteSeries deletes and cancels.

// seriesStep is the step of series name from expect (zero: none) to the
// time last, writing the message name@last due at last, with fingerprint
// fp.
func (e *env) seriesStep(name, fp string, expect store.Series, last time.Time) store.SeriesStep {
	id := name + "@" + last.UTC().Format(time.RFC3339Nano)
	return store.SeriesStep{
		Name: name, ExpectLast: expect.Last, ExpectFingerprint: expect.Fingerprint,
		Fingerprint: fp, Last: last, Next: last.Add(time.Minute),
		Message: store.Message{ID: id, Payload: []byte("payload of " + id), Due: last},
	}
}

// advance applies p, which must be applied, and returns the series.
func (e *env) advanceSeries(p store.SeriesStep) store.Series {
	e.t.Helper()
	sr, ok, err := e.keeper().AdvanceSeries(e.ctx, p)
	require.NoError(e.t, err)
	require.True(e.t, ok, "the step from %+v applies", p)
	return sr
}

// requireSeries checks that got is want, instants compared as instants.
func (e *env) requireSeries(want, got store.Series, what string) {
	e.t.Helper()
	require.Equal(e.t, want.Name, got.Name, what)
	require.Equal(e.t, want.Fingerprint, got.Fingerprint, what)
	require.True(e.t, want.Last.Equal(got.Last), "%s: Last %v, want %v", what, got.Last, want.Last)
	require.True(e.t, want.Next.Equal(got.Next), "%s: Next %v, want %v", what, got.Next, want.Next)
	require.Equal(e.t, want.Pending, got.Pending, what)
}

// stored is the series of name as the store reads it.
func (e *env) stored(name string) store.Series {
	e.t.Helper()
	sr, err := e.keeper().Series(e.ctx, name)
	require.NoError(e.t, err)
	return sr
}

// gone checks that the store holds no message id.
func (e *env) gone(id string) {
	e.t.Helper()
	_, err := e.s.Get(e.ctx, id)
	require.ErrorIs(e.t, err, store.ErrNotFound, "%s is gone", id)
}

// unsupported reports whether the store says it keeps no series (an
// error wrapping store.ErrSeriesUnsupported), and checks that it then
// says so from each of the four methods and writes nothing.
func (e *env) unsupported() bool {
	e.t.Helper()
	if _, ok := e.s.(store.SeriesKeeper); !ok {
		return true // not a store.SeriesKeeper: nothing to check
	}
	_, err := e.keeper().ListSeries(e.ctx)
	if !errors.Is(err, store.ErrSeriesUnsupported) {
		return false
	}
	_, err = e.keeper().Series(e.ctx, "s")
	require.ErrorIs(e.t, err, store.ErrSeriesUnsupported, "Series")
	p := e.seriesStep("s", "fp", store.Series{}, e.now())
	_, _, err = e.keeper().AdvanceSeries(e.ctx, p)
	require.ErrorIs(e.t, err, store.ErrSeriesUnsupported, "AdvanceSeries")
	_, err = e.keeper().DeleteSeries(e.ctx, "s")
	require.ErrorIs(e.t, err, store.ErrSeriesUnsupported, "DeleteSeries")
	e.gone(p.Message.ID)
	return true
}

// seriesRules are run by Run through ifSupported.
// For a store that keeps no series in its configuration, each rule checks
// that it says so (see unsupported) instead.
var seriesRules = unless((*env).unsupported, []rule{
	{"NoneAtFirst", func(e *env) {
		_, err := e.keeper().Series(e.ctx, "s")
		require.ErrorIs(e.t, err, store.ErrNotFound)
		list, err := e.keeper().ListSeries(e.ctx)
		require.NoError(e.t, err)
		require.Empty(e.t, list)
		found, err := e.keeper().DeleteSeries(e.ctx, "s")
		require.NoError(e.t, err)
		require.False(e.t, found)
	}},
	{"CreateWritesStateAndMessage", func(e *env) {
		at := e.now().Add(time.Minute)
		p := e.seriesStep("s", "fp1", store.Series{}, at)
		sr := e.advanceSeries(p)
		want := store.Series{Name: "s", Fingerprint: "fp1", Last: at, Next: at.Add(time.Minute), Pending: p.Message.ID}
		e.requireSeries(want, sr, "returned")
		e.requireSeries(want, e.stored("s"), "stored")
		info := e.get(p.Message.ID)
		require.Equal(e.t, store.Pending, info.State)
		require.True(e.t, at.Equal(info.Due), "due at its time")
		require.Equal(e.t, string(p.Message.Payload), string(info.Payload))
	}},
	{"CreateOnlyOnce", func(e *env) {
		at := e.now().Add(time.Minute)
		first := e.advanceSeries(e.seriesStep("s", "fp1", store.Series{}, at))
		p := e.seriesStep("s", "fp2", store.Series{}, at.Add(time.Second))
		cur, ok, err := e.keeper().AdvanceSeries(e.ctx, p)
		require.NoError(e.t, err)
		require.False(e.t, ok, "the series exists")
		e.requireSeries(first, cur, "the current state comes back")
		e.gone(p.Message.ID)
		e.requireSeries(first, e.stored("s"), "unchanged")
	}},
	{"StaleStepWritesNothing", func(e *env) {
		// Two processes read the state at a; one steps to b, its message
		// is delivered and acked; the other's step from a must not write
		// it again.
		a := e.now()
		sa := e.advanceSeries(e.seriesStep("s", "fp", store.Series{}, a))
		b := a.Add(100 * time.Millisecond) // short: a real-clock store waits for it
		pb := e.seriesStep("s", "fp", sa, b)
		sb := e.advanceSeries(pb)
		e.waitPast(a)
		l := e.claimOne(sa.Pending, time.Minute)
		require.NoError(e.t, e.s.Ack(e.ctx, store.LeaseRef{ID: l.ID, Token: l.Token}))
		e.waitPast(b)
		lb := e.claimOne(pb.Message.ID, time.Minute)
		require.NoError(e.t, e.s.Ack(e.ctx, store.LeaseRef{ID: lb.ID, Token: lb.Token}))
		cur, ok, err := e.keeper().AdvanceSeries(e.ctx, pb)
		require.NoError(e.t, err)
		require.False(e.t, ok, "the series moved on")
		e.requireSeries(sb, cur, "the current state comes back")
		e.gone(pb.Message.ID)
	}},
	{"FingerprintChecked", func(e *env) {
		at := e.now().Add(time.Minute)
		sr := e.advanceSeries(e.seriesStep("s", "fp1", store.Series{}, at))
		other := sr
		other.Fingerprint = "fp2"
		p := e.seriesStep("s", "fp2", other, at.Add(time.Minute))
		_, ok, err := e.keeper().AdvanceSeries(e.ctx, p)
		require.NoError(e.t, err)
		require.False(e.t, ok, "a step that expects another fingerprint")
		e.gone(p.Message.ID)
		// A rewrite that expects the stored fingerprint applies.
		p = e.seriesStep("s", "fp2", sr, at.Add(time.Minute))
		require.Equal(e.t, "fp2", e.advanceSeries(p).Fingerprint)
	}},
	{"CancelBeforeMessage", func(e *env) {
		at := e.now().Add(time.Minute)
		sr := e.advanceSeries(e.seriesStep("s", "fp1", store.Series{}, at))
		// Cancel the pending message, write none: Pending is kept.
		p := e.seriesStep("s", "fp2", sr, at)
		p.Message, p.Cancel = store.Message{}, sr.Pending
		got := e.advanceSeries(p)
		e.gone(sr.Pending)
		e.requireSeries(store.Series{Name: "s", Fingerprint: "fp2", Last: at, Next: at.Add(time.Minute), Pending: sr.Pending}, got, "no message: Pending kept")
		// Cancel and write the same ID: the message is the new one.
		p = e.seriesStep("s", "fp3", got, at)
		p.Cancel = p.Message.ID
		p.Message.Payload = []byte("new")
		e.advanceSeries(p)
		require.Equal(e.t, "new", string(e.get(p.Message.ID).Payload))
	}},
	{"CancelLeavesAHandedOutMessage", func(e *env) {
		at := e.now()
		sr := e.advanceSeries(e.seriesStep("s", "fp", store.Series{}, at))
		e.waitPast(at)
		e.claimOne(sr.Pending, time.Minute)
		p := e.seriesStep("s", "fp2", sr, at.Add(time.Minute))
		p.Cancel = sr.Pending
		e.advanceSeries(p)
		require.Equal(e.t, store.InFlight, e.get(sr.Pending).State, "handed out: left alone")
		require.Equal(e.t, store.Pending, e.get(p.Message.ID).State)
	}},
	{"MessageReplacesAsEnqueue", func(e *env) {
		at := e.now().Add(time.Minute)
		p := e.seriesStep("s", "fp", store.Series{}, at)
		e.enqueue(store.Message{ID: p.Message.ID, Payload: []byte("old"), Due: at.Add(time.Hour)})
		e.advanceSeries(p)
		info := e.get(p.Message.ID)
		require.Equal(e.t, string(p.Message.Payload), string(info.Payload))
		require.True(e.t, at.Equal(info.Due))
	}},
	{"ListByName", func(e *env) {
		at := e.now().Add(time.Minute)
		for _, name := range []string{"b", "a", "c"} {
			e.advanceSeries(e.seriesStep(name, "fp-"+name, store.Series{}, at))
		}
		list, err := e.keeper().ListSeries(e.ctx)
		require.NoError(e.t, err)
		var names []string
		for _, sr := range list {
			names = append(names, sr.Name)
			e.requireSeries(e.stored(sr.Name), sr, "listed as stored")
		}
		require.Equal(e.t, []string{"a", "b", "c"}, names)
	}},
	{"DeleteCancelsPending", func(e *env) {
		at := e.now().Add(time.Minute)
		sr := e.advanceSeries(e.seriesStep("s", "fp", store.Series{}, at))
		e.advanceSeries(e.seriesStep("t", "fp", store.Series{}, at))
		found, err := e.keeper().DeleteSeries(e.ctx, "s")
		require.NoError(e.t, err)
		require.True(e.t, found)
		e.gone(sr.Pending)
		_, err = e.keeper().Series(e.ctx, "s")
		require.ErrorIs(e.t, err, store.ErrNotFound)
		require.Equal(e.t, "t", e.stored("t").Name, "the other series stays")
		found, err = e.keeper().DeleteSeries(e.ctx, "s")
		require.NoError(e.t, err)
		require.False(e.t, found)
	}},
	{"ConcurrentStepsFromOneStateOneWins", func(e *env) {
		sr := e.advanceSeries(e.seriesStep("s", "fp", store.Series{}, e.now().Add(time.Minute)))
		e.seriesRace([]*env{e}, sr)
	}},
	{"RefusedStepCancelsNothing", func(e *env) {
		at := e.now().Add(time.Minute)
		sr := e.advanceSeries(e.seriesStep("s", "fp", store.Series{}, at))
		stale := sr
		stale.Last = sr.Last.Add(-time.Minute)
		p := e.seriesStep("s", "fp", stale, at.Add(time.Minute))
		p.Cancel = sr.Pending
		cur, ok, err := e.keeper().AdvanceSeries(e.ctx, p)
		require.NoError(e.t, err)
		require.False(e.t, ok, "a step from a state the series is not in")
		e.requireSeries(sr, cur, "the state as it is")
		require.Equal(e.t, store.Pending, e.get(sr.Pending).State, "the message the refused step names is not cancelled")
		e.gone(p.Message.ID)
		e.requireSeries(sr, e.stored("s"), "unchanged")
	}},
	{"TimesToTheNanosecond", func(e *env) {
		at := e.now().Add(time.Hour + 123*time.Nanosecond)
		p := e.seriesStep("s", "fp", store.Series{}, at)
		p.Next = at.Add(time.Minute + 999*time.Nanosecond)
		sr := e.advanceSeries(p)
		want := store.Series{Name: "s", Fingerprint: "fp", Last: p.Last, Next: p.Next, Pending: p.Message.ID}
		e.requireSeries(want, sr, "returned")
		e.requireSeries(want, e.stored("s"), "stored, to the nanosecond")
		list, err := e.keeper().ListSeries(e.ctx)
		require.NoError(e.t, err)
		require.Len(e.t, list, 1)
		e.requireSeries(want, list[0], "listed, to the nanosecond")
		// AdvanceSeries compares Last exactly.
		near := sr
		near.Last = sr.Last.Truncate(time.Microsecond)
		_, ok, err := e.keeper().AdvanceSeries(e.ctx, e.seriesStep("s", "fp", near, at.Add(time.Minute)))
		require.NoError(e.t, err)
		require.False(e.t, ok, "a step that expects Last to the microsecond only")
		e.advanceSeries(e.seriesStep("s", "fp", sr, at.Add(time.Minute)))
	}},
	{"DeleteLeavesAHandedOutMessage", func(e *env) {
		at := e.now()
		sr := e.advanceSeries(e.seriesStep("s", "fp", store.Series{}, at))
		e.waitPast(at)
		e.claimOne(sr.Pending, time.Minute)
		found, err := e.keeper().DeleteSeries(e.ctx, "s")
		require.NoError(e.t, err)
		require.True(e.t, found)
		require.Equal(e.t, store.InFlight, e.get(sr.Pending).State)
	}},
})

// unless makes each rule of rules check only if skip reports false: skip
// checks, on a store without the feature, that the store says so.
func unless(skip func(*env) bool, rules []rule) []rule {
	out := make([]rule, len(rules))
	for i, r := range rules {
		out[i] = rule{r.name, func(e *env) {
			if !skip(e) {
				r.check(e)
			}
		}}
	}
	return out
}
