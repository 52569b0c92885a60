package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var deadLetterRules = []rule{
	{"InTheOrderOfDeath", func(e *env) {
		for _, id := range []string{"c", "a", "b"} {
			e.kill(id)
			e.advance(time.Millisecond)
		}
		dl, err := e.deadLetters(10)
		require.NoError(e.t, err)
		var got []string
		for _, m := range dl {
			got = append(got, m.ID)
			info := e.get(m.ID)
			require.True(e.t, info.DiedAt.Equal(m.Due), "%s: Due is the time of death", m.ID)
			require.Equal(e.t, "payload of "+m.ID, string(m.Payload))
		}
		require.Equal(e.t, []string{"c", "a", "b"}, got)
		dl, err = e.deadLetters(2)
		require.NoError(e.t, err)
		require.Len(e.t, dl, 2, "up to limit")
		require.Equal(e.t, "c", dl[0].ID)
	}},
	{"EqualTimesOfDeathInWriteOrder", func(e *env) {
		// On a mock clock the three die at one instant.
		for _, id := range []string{"c", "a", "b"} {
			e.kill(id)
		}
		dl, err := e.deadLetters(10)
		require.NoError(e.t, err)
		var got []string
		for _, m := range dl {
			got = append(got, m.ID)
		}
		require.Equal(e.t, []string{"c", "a", "b"}, got)
	}},
}

var requeueRules = []rule{
	{"DeadToPending", func(e *env) {
		e.kill("a")
		first := e.get("a").EnqueuedAt
		e.advance(time.Millisecond)
		before, after := e.around(func() { require.NoError(e.t, e.s.Requeue(e.ctx, store.RequeueParams{ID: "a", Due: time.Time{}})) })
		info := e.get("a")
		e.requireBetween(info.Due, before, after, "a zero due: now")
		require.Equal(e.t, utc(store.Info{ID: "a", Payload: []byte("payload of a"), State: store.Pending,
			Due: info.Due, EnqueuedAt: first}), utc(info), "attempts from zero, no LastError, EnqueuedAt kept")
		l := e.claimOne("a", time.Minute)
		require.Equal(e.t, 1, l.Attempt)
		require.Empty(e.t, l.LastError)
		e.retry(l, store.RetryParams{Dead: true, Error: "again"})
		due := e.now().Add(time.Hour)
		require.NoError(e.t, e.s.Requeue(e.ctx, store.RequeueParams{ID: "a", Due: due}))
		require.True(e.t, due.Equal(e.get("a").Due), "due at the time given")
	}},
	{"EqualDueKeepsWriteOrder", func(e *env) {
		for _, id := range []string{"a", "b", "c"} {
			e.kill(id)
		}
		due := e.now().Add(e.short())
		for _, id := range []string{"b", "c", "a"} {
			require.NoError(e.t, e.s.Requeue(e.ctx, store.RequeueParams{ID: id, Due: due}))
		}
		e.enqueue(msg("z", due))
		want := []string{"b", "c", "a", "z"}
		infos, _ := e.listOnce(store.Pending, 3, nil)
		var listed []string
		for _, info := range infos {
			listed = append(listed, info.ID)
			require.True(e.t, due.Equal(info.Due), "%s: due at the time given", info.ID)
		}
		e.requireOrder(want, listed, "List: in the order of the Requeues, then the Enqueue")
		e.waitPast(due)
		e.requireOrder(want, ids(e.claimAll(time.Minute)), "Claim: in the order of the Requeues, then the Enqueue")
	}},
	{"OnlyDead", func(e *env) {
		require.ErrorIs(e.t, e.s.Requeue(e.ctx, store.RequeueParams{ID: "nothing", Due: time.Time{}}), store.ErrNotFound)
		e.enqueue(msg("pending", e.now().Add(time.Hour)), msg("inflight", e.past()))
		e.claimOne("inflight", time.Hour)
		for _, id := range []string{"pending", "inflight"} {
			before := e.get(id)
			require.ErrorIs(e.t, e.s.Requeue(e.ctx, store.RequeueParams{ID: id, Due: time.Time{}}), store.ErrNotFound, id)
			require.Equal(e.t, utc(before), utc(e.get(id)), "%s: unchanged", id)
		}
	}},
}

var getRules = []rule{
	{"NotFound", func(e *env) {
		_, err := e.s.Get(e.ctx, "nothing")
		require.ErrorIs(e.t, err, store.ErrNotFound)
	}},
	{"EachState", func(e *env) {
		due := e.now().Add(time.Hour)
		before, after := e.around(func() { e.enqueue(store.Message{ID: "a", Payload: []byte("v1"), Due: due}) })
		info := e.get("a")
		e.requireBetween(info.EnqueuedAt, before, after, "EnqueuedAt")
		require.Equal(e.t, utc(store.Info{ID: "a", Payload: []byte("v1"), State: store.Pending, Due: due,
			EnqueuedAt: info.EnqueuedAt}), utc(info), "pending: Due, no Deadline nor DiedAt")
		first := info.EnqueuedAt

		c := e.claim(claimArgs{Limit: 1, Lease: time.Minute, Ahead: 2 * time.Hour})
		require.Len(e.t, c.Leases, 1)
		info = e.get("a")
		e.requireInstant(c.Leases[0].Deadline, info.Deadline, "in flight: Deadline")
		require.Equal(e.t, utc(store.Info{ID: "a", Payload: []byte("v1"), State: store.InFlight, Attempt: 1,
			EnqueuedAt: first, Deadline: info.Deadline}), utc(info), "in flight, claimed ahead: no Due nor DiedAt")

		e.retry(c.Leases[0], store.RetryParams{Dead: true, Error: "boom"})
		info = e.get("a")
		require.Equal(e.t, utc(store.Info{ID: "a", Payload: []byte("v1"), State: store.Dead, Attempt: 1,
			LastError: "boom", EnqueuedAt: first, DiedAt: info.DiedAt}), utc(info), "dead: DiedAt only")
		require.False(e.t, info.DiedAt.IsZero())
	}},
}

var listRules = []rule{
	{"PendingPagesWhileTheCursorsMessageGoes", func(e *env) {
		msgs, _ := e.listMessages(600)
		e.enqueue(msgs...)
		got, _ := e.listOnce(store.Pending, 100, func(page []store.Info) {
			require.Len(e.t, page, 100, "a page before the last is full")
			// The message the cursor was made from goes away: the cursor
			// is a position, not a message.
			require.True(e.t, e.cancel(page[len(page)-1].ID))
		})
		require.Len(e.t, got, len(msgs), "every message, once")
		require.True(e.t, sortedBy(got, func(i store.Info) time.Time { return i.Due }), "by due time")
	}},
	{"InFlightPagesWhileAcking", func(e *env) {
		msgs, _ := e.listMessages(600)
		e.enqueue(msgs...)
		leases := e.claimAll(time.Hour)
		require.Len(e.t, leases, len(msgs))
		toAck := map[string]bool{}
		var acked []store.Lease
		for _, l := range leases {
			if rand.IntN(3) == 0 {
				toAck[l.ID] = true
				acked = append(acked, l)
			}
		}
		var wg sync.WaitGroup
		defer wg.Wait() // before the rule ends, even when it fails
		wg.Go(func() {
			for _, l := range acked {
				assert.NoError(e.t, e.s.Ack(e.ctx, store.LeaseRef{ID: l.ID, Token: l.Token}))
			}
		})
		got, seen := e.listOnce(store.InFlight, 100, nil)
		wg.Wait()
		require.True(e.t, sortedBy(got, func(i store.Info) time.Time { return i.Deadline }), "by lease deadline")
		for _, l := range leases {
			if !toAck[l.ID] {
				require.True(e.t, seen[l.ID], "%s stayed in flight and was not listed", l.ID)
			}
		}
	}},
	{"DeadPages", func(e *env) {
		msgs, _ := e.listMessages(300)
		e.enqueue(msgs...)
		for _, l := range e.claimAll(time.Hour) {
			e.retry(l, store.RetryParams{Dead: true, Error: "died " + l.ID})
		}
		got, _ := e.listOnce(store.Dead, 70, nil)
		require.Len(e.t, got, len(msgs))
		for _, info := range got {
			require.Equal(e.t, "died "+info.ID, info.LastError)
		}
		require.True(e.t, sortedBy(got, func(i store.Info) time.Time { return i.DiedAt }), "by time of death")
		dl, err := e.deadLetters(len(msgs))
		require.NoError(e.t, err)
		for i, m := range dl {
			require.Equal(e.t, got[i].ID, m.ID, "List and DeadLetters agree")
		}
	}},
	{"EqualTimesInWriteOrder", func(e *env) {
		msgs, want := e.listMessages(300)
		e.enqueue(msgs...)
		infos, _ := e.listOnce(store.Pending, 70, nil)
		got := make([]string, len(infos))
		for i, info := range infos {
			got[i] = info.ID
		}
		e.requireOrder(want[:len(got)], got, "by due time, then in the order of the Enqueue")
	}},
	{"InvalidCursors", func(e *env) {
		e.enqueue(msg("a", e.past()), msg("b", e.past()))
		_, next := e.list(store.Pending, "", 1)
		require.NotEmpty(e.t, next)
		for _, st := range []store.State{store.InFlight, store.Dead} {
			_, _, err := e.s.List(e.ctx, store.ListParams{State: st, Cursor: next, Limit: 1})
			require.ErrorIs(e.t, err, store.ErrInvalidCursor, "a cursor of pending messages for %v", st)
		}
		for _, bad := range []string{"garbage", "p", next + "0", "x" + next[1:]} {
			_, _, err := e.s.List(e.ctx, store.ListParams{State: store.Pending, Cursor: bad, Limit: 1})
			require.ErrorIs(e.t, err, store.ErrInvalidCursor, "%q", bad)
		}
		infos, last := e.list(store.Pending, next, 1)
		require.Len(e.t, infos, 1)
		require.Empty(e.t, last, "the end")
	}},
}

// listMessages returns n messages due in the past, shuffled, with groups of
// ten equal due times, and their IDs in the order of the state: by due
// time, then by their place in the slice.
func (e *env) listMessages(n int) ([]store.Message, []string) {
	base := e.now().Add(-time.Hour)
	msgs := make([]store.Message, n)
	for i := range msgs {
		msgs[i] = store.Message{ID: fmt.Sprintf("msg%05d", i), Due: base.Add(time.Duration(i/10) * time.Millisecond)}
	}
	rand.Shuffle(n, func(i, j int) { msgs[i], msgs[j] = msgs[j], msgs[i] })
	sorted := slices.Clone(msgs)
	slices.SortStableFunc(sorted, func(a, b store.Message) int { return a.Due.Compare(b.Due) })
	want := make([]string, n)
	for i, m := range sorted {
		want[i] = m.ID
	}
	return msgs, want
}

// listOnce pages through the messages of state st, limit at a time, and
// returns them and their IDs, checking that each is in st and listed once.
// It calls between, if not nil, with each page but the last before it
// reads the next.
func (e *env) listOnce(st store.State, limit int, between func(page []store.Info)) ([]store.Info, map[string]bool) {
	e.t.Helper()
	seen := map[string]bool{}
	var got []store.Info
	cursor := ""
	for pages := 0; ; pages++ {
		require.Less(e.t, pages, 100000, "List gave no end")
		infos, next := e.list(st, cursor, limit)
		for _, info := range infos {
			require.Equal(e.t, st, info.State)
			require.False(e.t, seen[info.ID], "%s listed twice", info.ID)
			seen[info.ID] = true
		}
		got = append(got, infos...)
		if next == "" {
			return got, seen
		}
		if between != nil {
			between(infos)
		}
		cursor = next
	}
}

func (e *env) list(st store.State, cursor string, limit int) ([]store.Info, string) {
	e.t.Helper()
	infos, next, err := e.s.List(e.ctx, store.ListParams{State: st, Cursor: cursor, Limit: limit})
	require.NoError(e.t, err)
	require.LessOrEqual(e.t, len(infos), limit)
	return infos, next
}

var statsRules = []rule{
	{"CountsEachState", func(e *env) {
		require.Equal(e.t, store.Stats{}, e.stats(), "empty")
		n := e.now()
		e.enqueue(msg("p1", n.Add(time.Hour)), msg("p2", n.Add(2*time.Hour)), msg("f", e.past()))
		e.claimOne("f", time.Hour)
		e.kill("d")
		st := e.stats()
		require.Equal(e.t, store.Stats{Pending: 2, InFlight: 1, Dead: 1, NextDue: st.NextDue}, st)
		require.True(e.t, n.Add(time.Hour).Equal(st.NextDue), "the earliest pending: %v", st.NextDue)
	}},
}

var closeRules = []rule{
	{"ThenErrClosed", func(e *env) {
		e.enqueue(msg("a", e.now().Add(time.Hour)))
		l := e.claimAhead("b", "v1") // a lease only the store's memory may know
		require.NoError(e.t, e.s.Close())
		ctx := e.ctx
		require.ErrorIs(e.t, e.s.Enqueue(ctx, []store.Message{msg("c", time.Time{})}), store.ErrClosed, "Enqueue")
		_, err := e.s.Cancel(ctx, "a")
		require.ErrorIs(e.t, err, store.ErrClosed, "Cancel")
		_, err = e.tryClaim(claimArgs{Limit: 1, Lease: time.Minute})
		require.ErrorIs(e.t, err, store.ErrClosed, "Claim")
		require.ErrorIs(e.t, e.s.Confirm(ctx, store.ConfirmParams{Lease: store.LeaseRef{ID: "b", Token: l.Token}}), store.ErrClosed, "Confirm")
		require.ErrorIs(e.t, e.s.Ack(ctx, store.LeaseRef{ID: "b", Token: l.Token}), store.ErrClosed, "Ack")
		require.ErrorIs(e.t, e.tryRetry(l, store.RetryParams{}), store.ErrClosed, "Retry")
		require.ErrorIs(e.t, e.s.Retry(e.ctx, store.RetryParams{Lease: store.LeaseRef{ID: l.ID, Token: l.Token}, After: 0}), store.ErrClosed, "Release")
		_, err = e.s.Expired(e.ctx, 1)
		require.ErrorIs(e.t, err, store.ErrClosed, "Expired")
		require.ErrorIs(e.t, e.s.Extend(ctx, store.ExtendParams{Lease: store.LeaseRef{ID: "b", Token: l.Token}, By: time.Minute}), store.ErrClosed, "Extend")
		_, err = e.tryReap(1, noBackoff)
		require.ErrorIs(e.t, err, store.ErrClosed, "Reap")
		_, err = e.s.Get(ctx, "a")
		require.ErrorIs(e.t, err, store.ErrClosed, "Get")
		_, _, err = e.s.List(ctx, store.ListParams{State: store.Pending, Cursor: "", Limit: 1})
		require.ErrorIs(e.t, err, store.ErrClosed, "List")
		_, err = e.deadLetters(1)
		require.ErrorIs(e.t, err, store.ErrClosed, "DeadLetters")
		require.ErrorIs(e.t, e.s.Requeue(ctx, store.RequeueParams{ID: "a", Due: time.Time{}}), store.ErrClosed, "Requeue")
		_, err = e.s.Stats(ctx)
		require.ErrorIs(e.t, err, store.ErrClosed, "Stats")
	}},
	closeOptionalRule,
}

// closeOptionalRule checks that the optional interfaces too return
// ErrClosed after Close, and write nothing: the store opened again holds
// no series and is not paused.
var closeOptionalRule = rule{"OptionalInterfacesToo", func(e *env) {
	_, pauser := e.s.(store.Pauser)
	_, keeper := e.s.(store.SeriesKeeper)
	if !pauser && !keeper {
		e.t.Skip("neither a store.Pauser nor a store.SeriesKeeper")
	}
	seriesUnsupported := keeper && e.unsupported()
	require.NoError(e.t, e.s.Close())
	closed := func(err error, what string) {
		e.t.Helper()
		if seriesUnsupported && errors.Is(err, store.ErrSeriesUnsupported) {
			return // either rule may answer
		}
		require.ErrorIs(e.t, err, store.ErrClosed, what)
	}
	if pauser {
		require.ErrorIs(e.t, e.s.(store.Pauser).SetPaused(e.ctx, true), store.ErrClosed, "SetPaused")
	}
	if keeper {
		k := e.s.(store.SeriesKeeper)
		p := e.seriesStep("s", "fp", store.Series{}, e.now().Add(time.Hour))
		_, _, err := k.AdvanceSeries(e.ctx, p)
		closed(err, "AdvanceSeries")
		_, err = k.Series(e.ctx, "s")
		closed(err, "Series")
		_, err = k.ListSeries(e.ctx)
		closed(err, "ListSeries")
		_, err = k.DeleteSeries(e.ctx, "s")
		closed(err, "DeleteSeries")
		e.reopen()
		e.gone(p.Message.ID)
		if !seriesUnsupported {
			_, err = e.keeper().Series(e.ctx, "s")
			require.ErrorIs(e.t, err, store.ErrNotFound, "AdvanceSeries after Close wrote nothing")
		}
	} else {
		e.reopen()
	}
	require.False(e.t, e.stats().Paused, "SetPaused after Close wrote nothing")
}}

var notifierRules = []rule{
	{"StopSilences", func(e *env) {
		// What a Notifier promises is about writes of other processes
		// (other handles on the backend), which a Harness cannot make:
		// the suite checks the channel and its stop function. The
		// wake-up on another handle's write is left to the store's
		// own tests.
		n, ok := e.s.(store.Notifier)
		if !ok {
			e.t.Skip("not a Notifier")
		}
		w, stop := n.Wakeups()
		require.NotNil(e.t, w)
		require.NotNil(e.t, stop)
		stop()
		for len(w) > 0 {
			<-w // sent before stop
		}
		for i := range 10 {
			e.enqueue(msg(fmt.Sprintf("m%d", i), e.now().Add(time.Duration(10-i)*time.Minute)))
		}
		select {
		case <-w:
			e.t.Fatal("a channel given back received")
		case <-time.After(100 * time.Millisecond):
		}
	}},
}
