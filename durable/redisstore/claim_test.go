package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// idsOfShard returns count IDs, prefix then a number, that hash to shard
// sh of n.
func idsOfShard(prefix string, n, sh, count int) []string {
	var out []string
	for i := 0; len(out) < count; i++ {
		id := fmt.Sprintf("%s%d", prefix, i)
		if shardOf(id, n) == sh {
			out = append(out, id)
		}
	}
	return out
}

// failScript returns a hook that fails the calls of sc on shard sh of s
// for which fail, given the number of the call on that shard (from 1),
// returns true, as a lost connection would, before they reach Redis.
func failScript(s *Store, sc *redis.Script, sh int, fail func(call int64) bool) cmdHook {
	var calls atomic.Int64
	key := s.shards[sh].keys[keyPending]
	return func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
		if isScript(cmd, sc) && slices.Contains(scriptKeys(cmd), key) && fail(calls.Add(1)) {
			err := errors.New("injected: connection lost")
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

// TestClaimKeepsLeasesOfAShardThatFailsLater has a shard lease messages in
// the first round of a Claim, then fail when called again for more: the
// leases it took are returned, not lost until their lease expires.
func TestClaimKeepsLeasesOfAShardThatFailsLater(t *testing.T) {
	srv := startRedis(t)
	c := srv.client(t)
	s := openStore(t, c, "q", WithShards(2))
	var msgs []durable.Message
	for _, id := range idsOfShard("a", 2, 0, 10) {
		msgs = append(msgs, msg(id, time.Time{}))
	}
	require.NoError(t, s.Enqueue(ctx, msgs))
	_, err := s.Claim(ctx, store.ClaimParams{Limit: 0, Lease: time.Minute}) // has Redis load the script
	require.NoError(t, err)
	c.AddHook(failScript(s, claimScript, 0, func(call int64) bool { return call == 2 }))

	// Shard 0 leases 5 in the first round (its share of 10), and fails
	// when called for the 5 more it has.
	cl, err := s.Claim(ctx, store.ClaimParams{Limit: 10, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, cl.Leases, 5)
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 5, st.InFlight, "every lease taken is returned")
	assert.Equal(t, 5, st.Pending)
	assert.True(t, cl.NextDue.Equal(cl.Now), "come back soon for the failed shard: next due %v, now %v", cl.NextDue, cl.Now)
	assert.True(t, cl.NextDeadline.Equal(cl.Now))
	for _, l := range cl.Leases {
		require.NoError(t, s.Ack(ctx, store.LeaseRef{ID: l.ID, Token: l.Token}))
	}

	// The shard is back: the other five.
	cl, err = s.Claim(ctx, store.ClaimParams{Limit: 10, Lease: time.Minute})
	require.NoError(t, err)
	assert.Len(t, cl.Leases, 5)
}

// TestClaimWithAFailedShardComesBackSoon has one shard of two fail on
// every call: a Claim returns the other's leases, with NextDue at Now,
// even though the other's last result has a later one; a Claim or Reap
// that takes nothing returns the error; so does a Claim on which every
// shard fails.
func TestClaimWithAFailedShardComesBackSoon(t *testing.T) {
	srv := startRedis(t)
	c := srv.client(t)
	s := openStore(t, c, "q", WithShards(2))
	now := redisNow(t, c)
	var msgs []durable.Message
	for _, id := range idsOfShard("a", 2, 0, 10) {
		msgs = append(msgs, msg(id, time.Time{}))
	}
	msgs = append(msgs, msg(idsOfShard("b", 2, 0, 1)[0], now.Add(time.Hour)))
	for _, id := range idsOfShard("c", 2, 1, 3) {
		msgs = append(msgs, msg(id, time.Time{}))
	}
	require.NoError(t, s.Enqueue(ctx, msgs))
	_, err := s.Claim(ctx, store.ClaimParams{Limit: 0, Lease: time.Minute})
	require.NoError(t, err)
	var down1, down0 atomic.Bool
	down1.Store(true)
	c.AddHook(failScript(s, claimScript, 1, func(int64) bool { return down1.Load() }))
	c.AddHook(failScript(s, claimScript, 0, func(int64) bool { return down0.Load() }))

	cl, err := s.Claim(ctx, store.ClaimParams{Limit: 12, Lease: time.Minute})
	require.NoError(t, err)
	assert.Len(t, cl.Leases, 10, "all of shard 0's due messages")
	assert.True(t, cl.NextDue.Equal(cl.Now), "shard 0's next due is in an hour, but shard 1 has due messages: next due %v, now %v", cl.NextDue, cl.Now)

	// Shard 0 has nothing due: nothing taken, the error comes back.
	_, err = s.Claim(ctx, store.ClaimParams{Limit: 12, Lease: time.Minute})
	require.ErrorContains(t, err, "injected")
	// Every shard fails.
	down0.Store(true)
	_, err = s.Claim(ctx, store.ClaimParams{Limit: 12, Lease: time.Minute})
	require.ErrorContains(t, err, "injected")

	// Back up: shard 1's three.
	down0.Store(false)
	down1.Store(false)
	cl, err = s.Claim(ctx, store.ClaimParams{Limit: 12, Lease: time.Minute})
	require.NoError(t, err)
	assert.Len(t, cl.Leases, 3)
	assert.True(t, cl.NextDue.After(cl.Now))

	// The same for Reap: shard 1 fails, shard 0 has nothing to reap.
	_, err = durable.Reap(ctx, s, 10, durable.RetryPolicy{MaxAttempts: 5})
	require.NoError(t, err)
	c.AddHook(failScript(s, expiredScript, 1, func(int64) bool { return true }))
	_, err = durable.Reap(ctx, s, 10, durable.RetryPolicy{MaxAttempts: 5})
	require.ErrorContains(t, err, "injected")
}

// TestReapBackoffPanicIsAnError has the back-off function panic: Reap
// returns an error and changes nothing, and a queue that reaps as it
// opens returns the error from New; with nothing expired, the function is
// not even called.
func TestReapBackoffPanicIsAnError(t *testing.T) {
	s, _, _ := newTestStore(t)
	boom := func(int) time.Duration { panic("boom") }
	q, err := durable.New(s, durable.WithBackoff(boom))
	require.NoError(t, err, "nothing expired: no back-off needed")
	require.NoError(t, q.Close())

	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("a", time.Time{})}))
	waitClaim(t, s, 0, 1) // a lease that expires at once
	_, err = durable.Reap(ctx, s, 10, durable.RetryPolicy{MaxAttempts: 5, Backoff: boom})
	require.ErrorContains(t, err, "panicked for attempt 1: boom")
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, st.InFlight, "the failed reap changed nothing")

	_, err = durable.New(s, durable.WithBackoff(boom))
	require.ErrorContains(t, err, "panicked")

	r, err := durable.Reap(ctx, s, 10, durable.RetryPolicy{MaxAttempts: 5, Backoff: func(int) time.Duration { return time.Hour }})
	require.NoError(t, err)
	assert.Equal(t, 1, r.Returned)
	assert.WithinDuration(t, r.Now.Add(time.Hour), r.NextDue, time.Second)
}

// TestReapCallsBackoffOncePerExpiredLease checks that Reap calls Backoff
// only for leases that expired, once each, with its own attempt, however
// high, and that each gets its own delay.
func TestReapCallsBackoffOncePerExpiredLease(t *testing.T) {
	s, c, _ := newTestStore(t)
	var asked []int
	backoff := func(a int) time.Duration {
		asked = append(asked, a)
		return time.Duration(len(asked)) * time.Hour
	}
	p := durable.RetryPolicy{MaxAttempts: 100, Backoff: backoff}

	r, err := durable.Reap(ctx, s, 10, p)
	require.NoError(t, err)
	assert.Zero(t, r.Returned+r.Dead)
	assert.Empty(t, asked, "nothing in flight")

	// Message "old" at its 69th failed attempt, past a table of 64.
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("old", time.Time{})}))
	for range 69 {
		waitClaim(t, s, 0, 1)
		r, err := durable.Reap(ctx, s, 10, durable.RetryPolicy{MaxAttempts: 100})
		require.NoError(t, err)
		require.Equal(t, 1, r.Returned)
	}
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("x", time.Time{}), msg("y", time.Time{}), msg("z", time.Time{})}))
	ls := waitClaim(t, s, time.Hour, 4)
	require.Equal(t, []string{"old", "x", "y", "z"}, ids(ls))
	assert.Equal(t, 70, ls[0].Attempt)
	r, err = durable.Reap(ctx, s, 10, p)
	require.NoError(t, err)
	assert.Zero(t, r.Returned+r.Dead)
	assert.Empty(t, asked, "leases in flight, none expired")

	for _, l := range ls {
		require.NoError(t, s.Extend(ctx, store.ExtendParams{Lease: store.LeaseRef{ID: l.ID, Token: l.Token}, By: 0}))
	}
	r, err = durable.Reap(ctx, s, 10, p)
	require.NoError(t, err)
	assert.Equal(t, 4, r.Returned)
	assert.Equal(t, []int{70, 1, 1, 1}, asked, "one call per lease, in order, with its attempt")
	// Each got its own delay: 1h, 2h, 3h, 4h.
	zs, err := c.ZRangeWithScores(ctx, "tw:{q}:pending", 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, zs, 4)
	for i, z := range zs {
		id := z.Member.(string)[20:]
		assert.Equal(t, ls[i].ID, id)
		due := time.UnixMicro(int64(z.Score))
		assert.WithinDuration(t, r.Now.Add(time.Duration(i+1)*time.Hour), due, time.Second, id)
	}
}
