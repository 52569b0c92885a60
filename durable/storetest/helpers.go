package storetest

import (
	"fmt"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// The helpers below fail the rule on an unexpected error.

// msg is a message id with a payload naming it, due at due.
func msg(id string, due time.Time) store.Message {
	return store.Message{ID: id, Payload: []byte("payload of " + id), Due: due}
}

// seqIDs returns n IDs, prefix00000 to prefix(n-1), in order.
func seqIDs(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%05d", prefix, i)
	}
	return out
}

// ids returns the IDs of leases.
// shard is the shard of id for a store that keeps its order per shard
// (store.ShardedOrder), and 0 for any other: one shard, the full order.
func (e *env) shard(id string) int {
	if so, ok := e.s.(store.ShardedOrder); ok {
		return so.Shard(id)
	}
	return 0
}

// sharded reports whether the store keeps its messages in more than one
// shard: a store.ShardedOrder whose Shard tells IDs apart. Only then may
// it weaken the rules of the held leases (see store.ShardedOrder); a
// store.ShardedOrder of one shard keeps them as any store does.
func (e *env) sharded() bool {
	so, ok := e.s.(store.ShardedOrder)
	if !ok {
		return false
	}
	for i := range 64 {
		if so.Shard(fmt.Sprintf("probe%d", i)) != so.Shard("probe") {
			return true
		}
	}
	return false
}

// byShard splits ids by shard, keeping their order.
func (e *env) byShard(ids []string) map[int][]string {
	out := make(map[int][]string)
	for _, id := range ids {
		out[e.shard(id)] = append(out[e.shard(id)], id)
	}
	return out
}

// requireOrder checks that got holds the IDs of want in want's order:
// exactly, or, for a store whose order holds per shard, within each
// shard (see store.ShardedOrder).
func (e *env) requireOrder(want, got []string, what string) {
	e.t.Helper()
	require.ElementsMatch(e.t, want, got, "%s: the same messages", what)
	require.Equal(e.t, e.byShard(want), e.byShard(got), "%s: in order (per shard, if the store's order is)", what)
}

// requirePrefix checks that got is the start of order: exactly, or within
// each shard for a store whose order holds per shard.
func (e *env) requirePrefix(order, got []string, what string) {
	e.t.Helper()
	all := e.byShard(order)
	for sh, ids := range e.byShard(got) {
		require.LessOrEqual(e.t, len(ids), len(all[sh]), "%s: shard %d", what, sh)
		require.Equal(e.t, all[sh][:len(ids)], ids, "%s: the earliest first (of shard %d)", what, sh)
	}
}

func ids(ls []store.Lease) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.ID
	}
	return out
}

func (e *env) enqueue(msgs ...store.Message) {
	e.t.Helper()
	require.NoError(e.t, e.s.Enqueue(e.ctx, msgs))
}

// past is a due time a second before now: due, whatever the clock does.
func (e *env) past() time.Time { return e.now().Add(-time.Second) }

func (e *env) claim(a claimArgs) store.Claimed {
	e.t.Helper()
	var (
		c   store.Claimed
		err error
	)
	e.around(func() { c, err = e.tryClaim(a) })
	require.NoError(e.t, err)
	e.requireClaimed(a, c)
	return c
}

// requireClaimed checks what every Claim returns, on the store's own
// clock: a message handed out is due by the claim's Now, and each lease's
// Ready is the later of its due time and that now (Ready is then Now at
// the latest, for a Now read later), its Deadline Ready plus the lease.
func (e *env) requireClaimed(a claimArgs, c store.Claimed) {
	e.t.Helper()
	require.LessOrEqual(e.t, len(c.Leases), max(a.Limit, 0), "at most Limit leases")
	for i, l := range c.Leases {
		require.False(e.t, l.Ready.Before(l.Due), "%s: Ready %v before its due time %v", l.ID, l.Ready, l.Due)
		if !l.Ahead {
			e.requireNotBefore(c.Now, l.Due, l.ID+" handed out by the claim")
			require.False(e.t, l.Ready.After(c.Now), "%s: handed out, its Ready %v is after the claim's Now %v", l.ID, l.Ready, c.Now)
		}
		// A store of microseconds rounds the lease up.
		d := l.Deadline.Sub(l.Ready)
		lease := a.Lease
		if l.Ahead && a.HeldLease > 0 && i >= a.Limit-max(a.Held, 0) {
			lease = a.HeldLease // claimed ahead beyond the first Limit-Held: held
			if e.sharded() && d >= a.Lease && d < a.Lease+time.Microsecond {
				continue // held beyond its shard's share only (see store.ShardedOrder)
			}
		}
		require.True(e.t, d >= lease && d < lease+time.Microsecond,
			"%s (lease %d of the claim): Deadline %v is %v after Ready %v, want the lease %v", l.ID, i, l.Deadline, d, l.Ready, lease)
	}
}

// claimOne claims the one message due, which must be id, handed out.
func (e *env) claimOne(id string, lease time.Duration) store.Lease {
	e.t.Helper()
	c := e.claim(claimArgs{Limit: 1, Lease: lease})
	require.Len(e.t, c.Leases, 1, "one message due")
	l := c.Leases[0]
	require.Equal(e.t, id, l.ID)
	require.False(e.t, l.Ahead, "due by now and not held: handed out by the claim")
	return l
}

// claimAhead enqueues id due aheadOf from now, claims it ahead (with a
// horizon of a minute) and returns its lease.
func (e *env) claimAhead(id, payload string) store.Lease {
	e.t.Helper()
	e.enqueue(store.Message{ID: id, Payload: []byte(payload), Due: e.now().Add(aheadOf)})
	c := e.claim(claimArgs{Limit: 1, Lease: time.Minute, Ahead: time.Minute})
	require.Len(e.t, c.Leases, 1)
	l := c.Leases[0]
	require.Equal(e.t, id, l.ID)
	require.True(e.t, l.Ahead, "a message due after now is claimed ahead")
	return l
}

// claimHeld enqueues the messages msgs, due after now, and claims them
// ahead and held (Held: all of them) on leases of lease and heldLease;
// it returns the leases, in the order of msgs.
func (e *env) claimHeld(lease, heldLease time.Duration, msgs ...store.Message) []store.Lease {
	e.t.Helper()
	e.enqueue(msgs...)
	c := e.claim(claimArgs{Limit: len(msgs), Held: len(msgs), Lease: lease, HeldLease: heldLease, Ahead: time.Minute})
	require.Len(e.t, c.Leases, len(msgs))
	byID := make(map[string]store.Lease)
	for _, l := range c.Leases {
		require.True(e.t, l.Ahead, "%s: due after now, claimed ahead and held", l.ID)
		byID[l.ID] = l
	}
	out := make([]store.Lease, len(msgs))
	for i, m := range msgs {
		out[i] = byID[m.ID]
		require.Equal(e.t, m.ID, out[i].ID)
	}
	return out
}

// aheadOf is how far in the future the messages claimed ahead are due:
// well within the claim's horizon of a minute, and well after its now.
const aheadOf = 10 * time.Second

// claimAll claims, 100 at a time, until a claim finds nothing due, and
// fails the rule if a message is claimed twice (a store that claims
// without end fails rather than hangs).
func (e *env) claimAll(lease time.Duration) []store.Lease {
	e.t.Helper()
	var out []store.Lease
	seen := map[string]bool{}
	for {
		c := e.claim(claimArgs{Limit: 100, Lease: lease})
		if len(c.Leases) == 0 {
			return out
		}
		for _, l := range c.Leases {
			require.False(e.t, seen[l.ID], "%s claimed twice", l.ID)
			seen[l.ID] = true
		}
		out = append(out, c.Leases...)
	}
}

func (e *env) retry(l store.Lease, p store.RetryParams) {
	e.t.Helper()
	require.NoError(e.t, e.tryRetry(l, p))
}

func (e *env) expired(limit int) store.ExpiredLeases {
	e.t.Helper()
	var (
		x   store.ExpiredLeases
		err error
	)
	e.around(func() { x, err = e.s.Expired(e.ctx, limit) })
	require.NoError(e.t, err)
	require.LessOrEqual(e.t, len(x.Leases), max(limit, 0), "at most limit leases")
	for _, l := range x.Leases {
		e.requireNotBefore(x.Now, l.Deadline, l.ID+" counted expired")
	}
	return x
}

func (e *env) reap(limit int, p retryPolicy) reaped {
	e.t.Helper()
	var (
		r   reaped
		err error
	)
	e.around(func() { r, err = e.tryReap(limit, p) })
	require.NoError(e.t, err)
	return r
}

// kill enqueues id due now and makes it die by failing its only attempt
// with the error text "killed".
func (e *env) kill(id string) {
	e.t.Helper()
	e.enqueue(msg(id, e.past()))
	l := e.claimOne(id, time.Minute)
	e.retry(l, store.RetryParams{Dead: true, Error: "killed"})
}

func (e *env) get(id string) store.Info {
	e.t.Helper()
	info, err := e.s.Get(e.ctx, id)
	require.NoError(e.t, err)
	return info
}

func (e *env) requireNotFound(id string) {
	e.t.Helper()
	_, err := e.s.Get(e.ctx, id)
	require.ErrorIs(e.t, err, store.ErrNotFound)
}

func (e *env) stats() store.Stats {
	e.t.Helper()
	st, err := e.s.Stats(e.ctx)
	require.NoError(e.t, err)
	return st
}

// requireCounts checks the counts of Stats.
func (e *env) requireCounts(pending, inFlight, dead int) {
	e.t.Helper()
	st := e.stats()
	require.Equal(e.t, [3]int{pending, inFlight, dead}, [3]int{st.Pending, st.InFlight, st.Dead},
		"pending, in flight, dead: %+v", st)
}

func (e *env) ack(l store.Lease) {
	e.t.Helper()
	require.NoError(e.t, e.s.Ack(e.ctx, store.LeaseRef{ID: l.ID, Token: l.Token}))
}

func (e *env) cancel(id string) bool {
	e.t.Helper()
	found, err := e.s.Cancel(e.ctx, id)
	require.NoError(e.t, err)
	return found
}

// requireLost checks that every call naming the lease l fails with
// ErrLeaseLost and changes nothing that Get shows.
func (e *env) requireLost(l store.Lease, why string) {
	e.t.Helper()
	before, getErr := e.s.Get(e.ctx, l.ID)
	require.ErrorIs(e.t, e.s.Confirm(e.ctx, store.ConfirmParams{Lease: store.LeaseRef{ID: l.ID, Token: l.Token}}), store.ErrLeaseLost, "Confirm %s", why)
	require.ErrorIs(e.t, e.s.Extend(e.ctx, store.ExtendParams{Lease: store.LeaseRef{ID: l.ID, Token: l.Token}, By: time.Hour}), store.ErrLeaseLost, "Extend %s", why)
	require.ErrorIs(e.t, e.tryRetry(l, store.RetryParams{Dead: true, Error: "lost"}), store.ErrLeaseLost, "Retry %s", why)
	require.ErrorIs(e.t, e.s.Retry(e.ctx, store.RetryParams{Lease: store.LeaseRef{ID: l.ID, Token: l.Token}, After: 0}), store.ErrLeaseLost, "Release %s", why)
	require.ErrorIs(e.t, e.s.Ack(e.ctx, store.LeaseRef{ID: l.ID, Token: l.Token}), store.ErrLeaseLost, "Ack %s", why)
	after, getErr2 := e.s.Get(e.ctx, l.ID)
	require.Equal(e.t, getErr == nil, getErr2 == nil)
	require.Equal(e.t, utc(before), utc(after), "a lost lease changes nothing")
}

// utc is info with its times in UTC, to compare instants with Equal.
func utc(info store.Info) store.Info {
	info.Due, info.EnqueuedAt = info.Due.UTC(), info.EnqueuedAt.UTC()
	info.Deadline, info.DiedAt = info.Deadline.UTC(), info.DiedAt.UTC()
	return info
}

// pauser is the store as a store.Pauser; the rules that call it run only
// for one (see pauseUnsupported).
func (e *env) pauser() store.Pauser {
	e.t.Helper()
	p, ok := e.s.(store.Pauser)
	require.True(e.t, ok, "%T is not a store.Pauser", e.s)
	return p
}

// keeper is the store as a store.SeriesKeeper; the rules that call it run
// only for one (see unsupported).
func (e *env) keeper() store.SeriesKeeper {
	e.t.Helper()
	k, ok := e.s.(store.SeriesKeeper)
	require.True(e.t, ok, "%T is not a store.SeriesKeeper", e.s)
	return k
}

// deadLetters lists up to limit dead messages, in the order they died,
// each with its time of death as Due.
func (e *env) deadLetters(limit int) ([]store.Message, error) {
	infos, _, err := e.s.List(e.ctx, store.ListParams{State: store.Dead, Limit: limit})
	out := make([]store.Message, len(infos))
	for i, info := range infos {
		out[i] = store.Message{ID: info.ID, Payload: info.Payload, Due: info.DiedAt}
	}
	return out, err
}
