package redisstore

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// countScript returns a hook that counts the calls of sc.
func countScript(sc *redis.Script, n *atomic.Int64) cmdHook {
	return func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
		if isScript(cmd, sc) {
			n.Add(1)
		}
		return next(ctx, cmd)
	}
}

// enqueueByShard enqueues counts[sh] messages in each shard sh of s,
// prefix then a number, due one microsecond apart from due (in the order
// of the shards, then of their counts), and returns them.
func enqueueByShard(t *testing.T, s *Store, prefix string, due time.Time, counts []int) []durable.Message {
	t.Helper()
	var msgs []durable.Message
	for sh, n := range counts {
		for _, id := range idsOfShard(prefix, len(counts), sh, n) {
			msgs = append(msgs, msg(id, due.Add(time.Duration(len(msgs))*time.Microsecond)))
		}
	}
	require.NoError(t, s.Enqueue(ctx, msgs))
	return msgs
}

// requireHeldLease checks the leases of a Claim made with p, of messages
// all due after now (ahead) or all due by now: the first Limit-Held of
// those claimed ahead last p.Lease after their Ready, the others
// p.HeldLease, held; every due one is handed out, on p.Lease. Every
// Deadline is the one Redis keeps, and each shard's leases come in its
// order (by due time).
func requireHeldLease(t *testing.T, s *Store, p store.ClaimParams, c store.Claimed, ahead bool, what string) {
	t.Helper()
	first := p.Limit - p.Held
	last := map[int]time.Time{}
	for i, l := range c.Leases {
		require.Equal(t, ahead, l.Ahead, "%s: lease %d (%s): claimed ahead if due after now", what, i, l.ID)
		want := p.Lease
		if ahead && i >= first {
			want = p.HeldLease
		}
		d := l.Deadline.Sub(l.Ready)
		require.True(t, d >= want && d < want+time.Microsecond, "%s: lease %d (%s) of %v, want %v", what, i, l.ID, d, want)
		info, err := s.Get(ctx, l.ID)
		require.NoError(t, err)
		require.True(t, info.Deadline.Equal(l.Deadline), "%s: %s: Deadline %v, Redis keeps %v", what, l.ID, l.Deadline, info.Deadline)
		sh := s.Shard(l.ID)
		require.True(t, l.Due.After(last[sh]), "%s: %s out of the order of shard %d", what, l.ID, sh)
		last[sh] = l.Due
	}
}

// A Claim with HeldLease of messages claimed ahead gives the first
// Limit-Held leases it returns the Lease and the others, held, the
// HeldLease, however the messages spread over the shards: with one shard
// in its one script call; with several, in one call a shard when every
// shard has its share of the first ones, and otherwise with one more
// call on the shards whose held leases become first ones. Messages due
// already are handed out on the Lease, in one call a shard.
func TestClaimHeldLeaseOverShards(t *testing.T) {
	srv := startRedis(t)
	c := srv.client(t)
	var moves atomic.Int64
	c.AddHook(countScript(firstLeaseScript, &moves))
	cases := []struct {
		counts        []int
		limit, held   int
		due           bool // due already, not claimed ahead
		wantLeases    int
		mayMove, must bool // the first leases may need moves; some must
	}{
		{counts: []int{5}, limit: 5, held: 3, wantLeases: 5},
		{counts: []int{2}, limit: 5, held: 3, wantLeases: 2},
		{counts: []int{8}, limit: 6, held: 0, wantLeases: 6},
		{counts: []int{8}, limit: 6, held: 6, wantLeases: 6},
		{counts: []int{8}, limit: 6, held: 2, wantLeases: 6},
		{counts: []int{10, 10, 10, 10}, limit: 20, held: 15, wantLeases: 20},
		{counts: []int{10, 10, 10, 10}, limit: 8, held: 1, wantLeases: 8},
		{counts: []int{0, 0, 0, 5}, limit: 5, held: 3, wantLeases: 5, mayMove: true},
		{counts: []int{1, 0, 0, 4}, limit: 5, held: 3, wantLeases: 5, mayMove: true},
		{counts: []int{0, 1, 1, 3}, limit: 5, held: 2, wantLeases: 5, mayMove: true},
		{counts: []int{2, 2, 0, 0}, limit: 5, held: 3, wantLeases: 4, mayMove: true},
		{counts: []int{5, 0, 1, 0}, limit: 6, held: 1, wantLeases: 6, mayMove: true},
		{counts: []int{0, 6}, limit: 4, held: 2, wantLeases: 4, mayMove: true, must: true},
		{counts: []int{3, 3, 3}, limit: 9, held: 9, wantLeases: 9},
		{counts: []int{3, 3, 3}, limit: 9, held: 0, wantLeases: 9},
		{counts: []int{8}, limit: 6, held: 4, due: true, wantLeases: 6},
		{counts: []int{0, 6}, limit: 4, held: 2, due: true, wantLeases: 4},
		{counts: []int{10, 10, 10, 10}, limit: 20, held: 15, due: true, wantLeases: 20},
		{counts: []int{3, 3, 3}, limit: 9, held: 9, due: true, wantLeases: 9},
	}
	anyMoved := false
	for i, tc := range cases {
		what := fmt.Sprintf("case %d %v limit %d held %d", i, tc.counts, tc.limit, tc.held)
		s := openStore(t, c, fmt.Sprintf("held%d", i), WithShards(len(tc.counts)))
		// Due in the future, within the claim's horizon: all claimed
		// ahead, the first ones on the Lease.
		due := redisNow(t, c).Add(30 * time.Second)
		if tc.due {
			due = redisNow(t, c).Add(-time.Second)
		}
		p := store.ClaimParams{Limit: tc.limit, Held: tc.held, Lease: time.Hour, HeldLease: 2 * time.Second, Ahead: time.Minute}
		enqueueByShard(t, s, "m", due, tc.counts)
		before := moves.Load()
		cl, err := s.Claim(ctx, p)
		require.NoError(t, err, what)
		require.Len(t, cl.Leases, tc.wantLeases, what)
		requireHeldLease(t, s, p, cl, !tc.due, what)
		moved := moves.Load() - before
		if !tc.mayMove {
			assert.Zero(t, moved, "%s: every shard had its share: one script call each", what)
		}
		if tc.must {
			assert.Positive(t, moved, "%s: a shard short of its share, another holding: moved", what)
		}
		anyMoved = anyMoved || moved > 0
	}
	assert.True(t, anyMoved)
}

// The call that moves held leases to the Lease fails: the Claim returns
// every lease it took, those it could not move after the others, each
// with the deadline it has in Redis.
func TestClaimHeldLeaseMoveFails(t *testing.T) {
	srv := startRedis(t)
	c := srv.client(t)
	s := openStore(t, c, "q", WithShards(2))
	// Shard 0 has none of its share (one) of the first leases; shard 1
	// holds one of its four, which becomes a first one.
	enqueueByShard(t, s, "m", redisNow(t, c).Add(30*time.Second), []int{0, 4})
	p := store.ClaimParams{Limit: 4, Held: 2, Lease: time.Hour, HeldLease: 2 * time.Second, Ahead: time.Minute}
	c.AddHook(failScript(s, firstLeaseScript, 1, func(int64) bool { return true }))
	cl, err := s.Claim(ctx, p)
	require.NoError(t, err)
	require.Len(t, cl.Leases, 4)
	for i, l := range cl.Leases {
		want := p.HeldLease
		if i == 0 {
			want = p.Lease
		}
		assert.Equal(t, want, l.Deadline.Sub(l.Ready), "lease %d: the first on the Lease, the others not moved", i)
		info, err := s.Get(ctx, l.ID)
		require.NoError(t, err)
		assert.True(t, info.Deadline.Equal(l.Deadline), "%s: Deadline %v, Redis keeps %v", l.ID, l.Deadline, info.Deadline)
	}
}

// A lease lost between the Claim's script and the move (its message
// replaced) is left as the new message has it.
func TestFirstLeaseOfALostLease(t *testing.T) {
	s, c, _ := newTestStore(t, WithShards(2))
	enqueueByShard(t, s, "m", redisNow(t, c).Add(-time.Second), []int{2, 0})
	cl, err := s.Claim(ctx, store.ClaimParams{Limit: 2, Held: 2, Lease: time.Second})
	require.NoError(t, err)
	require.Len(t, cl.Leases, 2)
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg(cl.Leases[1].ID, time.Time{})}))
	ls := []shardLease{{Lease: cl.Leases[0], shard: 0}, {Lease: cl.Leases[1], shard: 0}}
	done := s.firstLease(ctx, ls, time.Hour.Microseconds())
	assert.Equal(t, []bool{true, true}, done)
	assert.Equal(t, time.Hour+time.Second, ls[0].Deadline.Sub(ls[0].Ready), "moved")
	assert.Equal(t, cl.Leases[1].Deadline, ls[1].Deadline, "lost: not moved")
	info, err := s.Get(ctx, ls[0].ID)
	require.NoError(t, err)
	assert.True(t, info.Deadline.Equal(ls[0].Deadline))
	info, err = s.Get(ctx, ls[1].ID)
	require.NoError(t, err)
	assert.Equal(t, durable.Pending, info.State, "the new message, untouched")
}
