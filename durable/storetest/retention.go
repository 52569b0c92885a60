package storetest

import (
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// The dead letters' retention (store.Retention): the Retry that makes a
// message dead deletes, in the same write, the oldest dead letters beyond
// MaxCount and those dead longer than MaxAge, at most store.MaxTrim of
// them, never the one dying.

// deadIDs is the IDs of the dead letters, in the order they died.
func (e *env) deadIDs() []string {
	e.t.Helper()
	infos, _ := e.listOnce(store.Dead, 100, nil)
	out := []string{}
	for _, info := range infos {
		out = append(out, info.ID)
	}
	return out
}

// die makes the in-flight lease l dead under r.
func (e *env) die(l store.Lease, r store.Retention) {
	e.t.Helper()
	e.retry(l, store.RetryParams{Dead: true, Error: "dead", Retention: r})
}

var retentionRules = []rule{
	{"MaxCountKeepsTheNewest", func(e *env) {
		all := seqIDs("d", 5)
		for i, id := range all {
			e.enqueue(msg(id, e.past()))
			e.die(e.claimOne(id, time.Minute), store.Retention{MaxCount: 3})
			want := all[max(0, i-2) : i+1]
			require.Equal(e.t, want, e.deadIDs(), "after death %d: the newest three", i+1)
		}
	}},
	{"MaxAgeDropsTheOld", func(e *env) {
		e.kill("old")
		age := e.short()
		e.waitPast(e.get("old").DiedAt.Add(age))
		e.enqueue(msg("new", e.past()))
		e.die(e.claimOne("new", time.Minute), store.Retention{MaxAge: age})
		require.Equal(e.t, []string{"new"}, e.deadIDs(), "the letter dead longer than MaxAge is gone")
		e.enqueue(msg("newer", e.past()))
		e.die(e.claimOne("newer", time.Minute), store.Retention{MaxAge: time.Hour})
		require.Equal(e.t, []string{"new", "newer"}, e.deadIDs(), "a younger one stays")
	}},
	{"AtMostMaxTrimAWrite", func(e *env) {
		n := store.MaxTrim + 20
		var batch []store.Message
		for _, id := range seqIDs("d", n) {
			batch = append(batch, msg(id, e.past()))
		}
		e.enqueue(batch...)
		for _, l := range e.claimAll(time.Minute) {
			e.die(l, store.Retention{})
		}
		require.Len(e.t, e.deadIDs(), n, "no Retention: all kept")
		e.advance(time.Millisecond)
		e.enqueue(msg("last", e.past()))
		e.die(e.claimOne("last", time.Minute), store.Retention{MaxCount: 1, MaxAge: time.Nanosecond})
		want := append(seqIDs("d", n)[store.MaxTrim:], "last")
		require.Equal(e.t, want, e.deadIDs(), "store.MaxTrim deleted, the oldest, not the one dying")
		e.enqueue(msg("more", e.past()))
		e.die(e.claimOne("more", time.Minute), store.Retention{MaxCount: 1})
		require.Equal(e.t, []string{"more"}, e.deadIDs(), "the next death trims the rest")
	}},
}
