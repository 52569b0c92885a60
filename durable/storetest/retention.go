package storetest

import (
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// The dead letters' retention (store.Retention): the Retry that makes a
// message dead deletes, in the same write, the oldest dead letters beyond
// MaxCount and those dead longer than MaxAge, at most store.MaxTrim of
// them, never the one dying. A store.ShardedOrder store keeps it per
// shard, each shard its share of MaxCount: the rules use IDs of one
// shard, and a MaxCount of 1 (every shard's share) on such a store.

// oneShard returns n IDs, prefix00000 on, all in one shard (see
// store.ShardedOrder), in order.
func (e *env) oneShard(prefix string, n int) []string {
	if _, ok := e.s.(store.ShardedOrder); !ok {
		return seqIDs(prefix, n)
	}
	var out []string
	for _, id := range seqIDs(prefix, 100*n) {
		if e.shard(id) == e.shard(prefix+"00000") {
			out = append(out, id)
		}
		if len(out) == n {
			return out
		}
	}
	e.t.Fatalf("no %d IDs of one shard among %d", n, 100*n)
	return nil
}

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
		keep := 3
		if e.sharded() {
			keep = 1
		}
		all := e.oneShard("d", 5)
		for i, id := range all {
			e.enqueue(msg(id, e.past()))
			e.die(e.claimOne(id, time.Minute), store.Retention{MaxCount: keep})
			want := all[max(0, i+1-keep) : i+1]
			require.Equal(e.t, want, e.deadIDs(), "after death %d: the newest %d", i+1, keep)
		}
	}},
	{"MaxAgeDropsTheOld", func(e *env) {
		id := e.oneShard("d", 3)
		e.kill(id[0])
		age := e.short()
		e.waitPast(e.get(id[0]).DiedAt.Add(age))
		e.enqueue(msg(id[1], e.past()))
		e.die(e.claimOne(id[1], time.Minute), store.Retention{MaxAge: age})
		require.Equal(e.t, id[1:2], e.deadIDs(), "the letter dead longer than MaxAge is gone")
		e.enqueue(msg(id[2], e.past()))
		e.die(e.claimOne(id[2], time.Minute), store.Retention{MaxAge: time.Hour})
		require.Equal(e.t, id[1:3], e.deadIDs(), "a younger one stays")
	}},
	{"AtMostMaxTrimAWrite", func(e *env) {
		n := store.MaxTrim + 20
		all := e.oneShard("d", n+2)
		var batch []store.Message
		for _, id := range all[:n] {
			batch = append(batch, msg(id, e.past()))
		}
		e.enqueue(batch...)
		for _, l := range e.claimAll(time.Minute) {
			e.die(l, store.Retention{})
		}
		require.Len(e.t, e.deadIDs(), n, "no Retention: all kept")
		e.advance(time.Millisecond)
		last, more := all[n], all[n+1]
		e.enqueue(msg(last, e.past()))
		e.die(e.claimOne(last, time.Minute), store.Retention{MaxCount: 1, MaxAge: time.Nanosecond})
		require.Equal(e.t, all[store.MaxTrim:n+1], e.deadIDs(), "store.MaxTrim deleted, the oldest, not the one dying")
		e.enqueue(msg(more, e.past()))
		e.die(e.claimOne(more, time.Minute), store.Retention{MaxCount: 1})
		require.Equal(e.t, []string{more}, e.deadIDs(), "the next death trims the rest")
	}},
}
