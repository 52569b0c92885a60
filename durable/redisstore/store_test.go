package redisstore

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/seed64e23a5c/timingwheel/internal/leasetest"
)

var ctx = context.Background()

func TestEnqueueClaimAck(t *testing.T) {
	s, c, _ := newTestStore(t)
	before := redisNow(t, c)
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("a", time.Time{})}))

	cl, err := s.Claim(ctx, store.ClaimParams{Limit: 10, Lease: 30 * time.Second})
	require.NoError(t, err)
	require.Len(t, cl.Leases, 1)
	l := cl.Leases[0]
	assert.Equal(t, "a", l.ID)
	assert.Equal(t, []byte("payload of a"), l.Payload)
	assert.Equal(t, 1, l.Attempt)
	assert.NotZero(t, l.Token)
	// A zero Due is Redis's now at Enqueue.
	assert.False(t, l.Due.Before(before.Truncate(time.Microsecond)), "due %v before %v", l.Due, before)
	assert.False(t, l.Due.After(cl.Now))
	// The deadline is the store's now plus the lease.
	assert.Equal(t, cl.Now.Add(30*time.Second), l.Deadline)
	assert.Equal(t, l.Deadline, cl.NextDeadline)
	assert.True(t, cl.NextDue.IsZero())
	// Now is Redis's clock.
	assert.WithinDuration(t, redisNow(t, c), cl.Now, time.Second)

	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, durable.Stats{InFlight: 1}, st)

	require.NoError(t, s.Ack(ctx, store.LeaseRef{ID: "a", Token: l.Token}))
	assert.ErrorIs(t, s.Ack(ctx, store.LeaseRef{ID: "a", Token: l.Token}), durable.ErrLeaseLost)
	st, err = s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, durable.Stats{}, st)
	// Nothing is left but the shard count.
	keys, err := c.Keys(ctx, "*").Result()
	require.NoError(t, err)
	for _, k := range keys {
		assert.Contains(t, []string{"tw:{q}:shards", "tw:{q}:seq", "tw:{q}:token"}, k)
	}
}

func TestEmptyPayloadAndBinary(t *testing.T) {
	s, _, _ := newTestStore(t)
	bin := []byte{0, 1, 2, 255, '|', 0}
	require.NoError(t, s.Enqueue(ctx, []durable.Message{
		{ID: "empty"},
		{ID: "bin\x00|id", Payload: bin},
	}))
	ls := claimAll(t, s, time.Minute)
	require.Len(t, ls, 2)
	assert.Empty(t, ls[0].Payload)
	assert.Equal(t, "bin\x00|id", ls[1].ID)
	assert.Equal(t, bin, ls[1].Payload)
}

func TestFIFOAmongEqualDue(t *testing.T) {
	s, c, _ := newTestStore(t)
	due := redisNow(t, c).Add(-time.Second)
	var want []string
	// One batch, then one message per call, then zero dues in a batch.
	var batch []durable.Message
	for _, id := range seqIDs("z", 50) {
		batch = append(batch, msg(id, due))
		want = append(want, id)
	}
	require.NoError(t, s.Enqueue(ctx, batch))
	for _, id := range []string{"b", "a", "c"} {
		require.NoError(t, s.Enqueue(ctx, []durable.Message{msg(id, due)}))
		want = append(want, id)
	}
	got := ids(claimAll(t, s, time.Minute))
	assert.Equal(t, want, got)

	batch = nil
	want = nil
	for _, id := range []string{"y", "x", "w", "v"} {
		batch = append(batch, msg(id, time.Time{}))
		want = append(want, id)
	}
	require.NoError(t, s.Enqueue(ctx, batch))
	assert.Equal(t, want, ids(claimAll(t, s, time.Minute)))
}

func TestEarliestFirst(t *testing.T) {
	s, c, _ := newTestStore(t)
	now := redisNow(t, c)
	// Due times a nanosecond, a microsecond, a millisecond apart.
	dues := map[string]time.Time{
		"e": now.Add(-time.Millisecond),
		"d": now.Add(-time.Millisecond - time.Nanosecond),
		"c": now.Add(-time.Millisecond - time.Microsecond),
		"b": now.Add(-2 * time.Millisecond),
		"a": now.Add(-time.Hour),
	}
	for _, id := range []string{"e", "c", "a", "d", "b"} {
		require.NoError(t, s.Enqueue(ctx, []durable.Message{msg(id, dues[id])}))
	}
	ls := claimAll(t, s, time.Minute)
	assert.Equal(t, []string{"a", "b", "c", "d", "e"}, ids(ls))
	for _, l := range ls {
		// The exact Due comes back, to the nanosecond.
		assert.True(t, dues[l.ID].Equal(l.Due), "%s: due %v, want %v", l.ID, l.Due, dues[l.ID])
	}
}

func TestNeverClaimedBeforeDue(t *testing.T) {
	s, c, _ := newTestStore(t)
	due := redisNow(t, c).Add(150*time.Millisecond + 123*time.Nanosecond)
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("a", due), msg("later", due.Add(time.Hour))}))
	for {
		cl, err := s.Claim(ctx, store.ClaimParams{Limit: 10, Lease: time.Minute})
		require.NoError(t, err)
		if len(cl.Leases) == 0 {
			require.True(t, cl.Now.Before(due), "nothing claimed at %v, due %v", cl.Now, due)
			assert.True(t, cl.NextDue.Equal(due.Truncate(time.Microsecond).Add(time.Microsecond)), "next due %v", cl.NextDue)
			time.Sleep(5 * time.Millisecond)
			continue
		}
		require.Len(t, cl.Leases, 1)
		assert.Equal(t, "a", cl.Leases[0].ID)
		assert.False(t, cl.Now.Before(due), "claimed at %v, due %v", cl.Now, due)
		assert.True(t, due.Equal(cl.Leases[0].Due))
		assert.True(t, cl.NextDue.Equal(due.Add(time.Hour).Truncate(time.Microsecond).Add(time.Microsecond)))
		break
	}
}

func TestScoresInMicroseconds(t *testing.T) {
	s, c, _ := newTestStore(t)
	due := time.Unix(1_900_000_000, 123_456_789)
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("a", due)}))
	zs, err := c.ZRangeWithScores(ctx, "tw:{q}:pending", 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, zs, 1)
	assert.Equal(t, float64(1_900_000_000_123_457), zs[0].Score)
	assert.True(t, strings.HasSuffix(zs[0].Member.(string), "a"))
	// Every key carries the queue's hash tag.
	keys, err := c.Keys(ctx, "*").Result()
	require.NoError(t, err)
	for _, k := range keys {
		assert.Contains(t, k, "{q}")
	}
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, time.UnixMicro(1_900_000_000_123_457), st.NextDue)
}

// TestDueRange: the ends of store's time range are kept; a due time
// beyond them is refused, and nothing is written.
func TestDueRange(t *testing.T) {
	s, c, _ := newTestStore(t)
	for _, due := range []time.Time{time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)} {
		err := s.Enqueue(ctx, []durable.Message{msg("x", due)})
		require.ErrorIs(t, err, store.ErrInvalidMessage, "%v", due)
	}
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("last", store.MaxTime), msg("first", store.MinTime)}))
	ls := claimAll(t, s, time.Minute)
	require.Len(t, ls, 1)
	assert.Equal(t, "first", ls[0].ID)
	assert.True(t, ls[0].Due.Equal(store.MinTime), "%v", ls[0].Due)
	z, err := c.ZRangeWithScores(ctx, "tw:{q}:pending", 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, z, 1)
	assert.Equal(t, float64(maxMicros), z[0].Score)
}

func TestUpsertPending(t *testing.T) {
	s, c, _ := newTestStore(t)
	now := redisNow(t, c)
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("a", now.Add(time.Hour))}))
	require.NoError(t, s.Enqueue(ctx, []durable.Message{{ID: "a", Payload: []byte("v2"), Due: now.Add(-time.Second)}}))
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, st.Pending)
	ls := claimAll(t, s, time.Minute)
	require.Len(t, ls, 1)
	assert.Equal(t, []byte("v2"), ls[0].Payload)

	// And the other way: a due message moved to later is not claimed.
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("b", now.Add(-time.Second))}))
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("b", now.Add(time.Hour))}))
	assert.Empty(t, claimAll(t, s, time.Minute))
}

func TestUpsertInFlightRevokesLease(t *testing.T) {
	s, _, _ := newTestStore(t)
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("a", time.Time{})}))
	first := claimAll(t, s, time.Minute)
	require.Len(t, first, 1)
	old := first[0]

	require.NoError(t, s.Enqueue(ctx, []durable.Message{{ID: "a", Payload: []byte("v2")}}))
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, st.Pending)
	assert.Equal(t, 0, st.InFlight)
	assert.ErrorIs(t, s.Ack(ctx, store.LeaseRef{ID: "a", Token: old.Token}), durable.ErrLeaseLost)
	assert.ErrorIs(t, s.Extend(ctx, store.ExtendParams{Lease: store.LeaseRef{ID: "a", Token: old.Token}, By: time.Hour}), durable.ErrLeaseLost)
	err = s.Retry(ctx, store.RetryParams{Lease: store.LeaseRef{ID: "a", Token: old.Token}})
	assert.ErrorIs(t, err, durable.ErrLeaseLost)

	second := claimAll(t, s, time.Minute)
	require.Len(t, second, 1)
	assert.Equal(t, 1, second[0].Attempt, "the attempt count starts again")
	assert.Greater(t, second[0].Token, old.Token)
	assert.Equal(t, []byte("v2"), second[0].Payload)
	assert.ErrorIs(t, s.Ack(ctx, store.LeaseRef{ID: "a", Token: old.Token}), durable.ErrLeaseLost)
	require.NoError(t, s.Ack(ctx, store.LeaseRef{ID: "a", Token: second[0].Token}))
}

// TestEnqueueSentAgainKeepsALeaseTakenMeanwhile sends an Enqueue call
// again, as go-redis does when the reply of a command is lost, after a
// consumer claimed its message: the second send changes nothing, and the
// lease holds. The same for a batch over two shards, which is a MULTI/EXEC
// transaction.
func TestEnqueueSentAgainKeepsALeaseTakenMeanwhile(t *testing.T) {
	srv := startRedis(t)
	c := srv.client(t)
	for _, shards := range []int{1, 2} {
		queue := fmt.Sprintf("q%d", shards)
		producer := openStore(t, c, queue, WithShards(shards))
		consumer := openStore(t, srv.client(t), queue, WithShards(shards))
		var msgs []durable.Message
		for sh := range shards {
			msgs = append(msgs, msg(idsOfShard("a", shards, sh, 1)[0], time.Time{}))
		}
		var leases []store.Lease
		again := func() {
			leases = waitClaim(t, consumer, time.Minute, len(msgs))
		}
		var armed atomic.Bool
		armed.Store(true)
		if shards == 1 {
			require.NoError(t, producer.Enqueue(ctx, []durable.Message{msg("warm-up", time.Now().Add(time.Hour))}))
			c.AddHook(cmdHook(func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
				err := next(ctx, cmd)
				if err == nil && isScript(cmd, enqueueScript) && armed.CompareAndSwap(true, false) {
					again()
					err = next(ctx, cmd)
				}
				return err
			}))
		} else {
			c.AddHook(pipelineHook(func(ctx context.Context, cmds []redis.Cmder, next redis.ProcessPipelineHook) error {
				err := next(ctx, cmds)
				if err == nil && armed.CompareAndSwap(true, false) {
					again()
					err = next(ctx, cmds)
				}
				return err
			}))
		}
		require.NoError(t, producer.Enqueue(ctx, msgs))
		require.False(t, armed.Load(), "sent again")
		require.Len(t, leases, len(msgs))
		st, err := producer.Stats(ctx)
		require.NoError(t, err)
		assert.Equal(t, len(msgs), st.InFlight, "%d shards", shards)
		for _, l := range leases {
			require.NoError(t, consumer.Ack(ctx, store.LeaseRef{ID: l.ID, Token: l.Token}), "%d shards: the lease holds", shards)
		}

		// A new call of the same message replaces it, as ever.
		require.NoError(t, producer.Enqueue(ctx, msgs[:1]))
		ls := waitClaim(t, consumer, time.Minute, 1)
		require.NoError(t, producer.Enqueue(ctx, msgs[:1]))
		assert.ErrorIs(t, consumer.Ack(ctx, store.LeaseRef{ID: ls[0].ID, Token: ls[0].Token}), durable.ErrLeaseLost)
	}
}

// TestEnqueueSameIDTwiceInOneCall checks that the last of the messages of
// an ID in one Enqueue wins, in its place, also across the script calls
// of a large batch.
func TestEnqueueSameIDTwiceInOneCall(t *testing.T) {
	s, _, _ := newTestStore(t)
	require.NoError(t, s.Enqueue(ctx, []durable.Message{
		{ID: "a", Payload: []byte("first")}, {ID: "b"}, {ID: "a", Payload: []byte("last")},
	}))
	ls := claimAll(t, s, time.Minute)
	require.Equal(t, []string{"b", "a"}, ids(ls))
	assert.Equal(t, "last", string(ls[1].Payload))

	msgs := make([]durable.Message, 0, 2*maxEnqueueScript)
	for _, id := range seqIDs("m", 2*maxEnqueueScript-1) {
		msgs = append(msgs, msg(id, time.Time{}))
	}
	msgs[0].Payload = []byte("first")
	msgs = append(msgs, durable.Message{ID: msgs[0].ID, Payload: []byte("last")})
	require.NoError(t, s.Enqueue(ctx, msgs))
	ls = claimAll(t, s, time.Minute)
	require.Len(t, ls, len(msgs)-1)
	last := ls[len(ls)-1]
	assert.Equal(t, msgs[0].ID, last.ID)
	assert.Equal(t, "last", string(last.Payload))
}

func TestTokensNeverReused(t *testing.T) {
	s, _, _ := newTestStore(t)
	var last uint64
	for range 5 {
		// Enqueue, claim, ack, and again: the same ID gets new tokens.
		require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("a", time.Time{})}))
		ls := claimAll(t, s, time.Minute)
		require.Len(t, ls, 1)
		assert.Greater(t, ls[0].Token, last)
		last = ls[0].Token
		if last%2 == 0 {
			require.NoError(t, s.Ack(ctx, store.LeaseRef{ID: "a", Token: last}))
		}
	}
}

func TestUpsertDead(t *testing.T) {
	s, _, _ := newTestStore(t)
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("a", time.Time{})}))
	ls := claimAll(t, s, time.Minute)
	err := s.Retry(ctx, store.RetryParams{Lease: store.LeaseRef{ID: "a", Token: ls[0].Token}, Dead: true})
	require.NoError(t, err)
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("a", time.Time{})}))
	dl, err := leasetest.DeadLetters(ctx, s, 10)
	require.NoError(t, err)
	assert.Empty(t, dl)
	ls = claimAll(t, s, time.Minute)
	require.Len(t, ls, 1)
	assert.Equal(t, 1, ls[0].Attempt)
}

func TestFencing(t *testing.T) {
	s, _, _ := newTestStore(t)
	policy := durable.RetryPolicy{MaxAttempts: 10, Backoff: func(int) time.Duration { return 0 }}
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("a", time.Time{}), msg("b", time.Time{})}))
	ls := claimAll(t, s, 20*time.Millisecond)
	require.Len(t, ls, 2)
	time.Sleep(30 * time.Millisecond)

	// b's lease expired but nobody took it: its ack still holds.
	require.NoError(t, s.Ack(ctx, store.LeaseRef{ID: "b", Token: ls[1].Token}))

	// a's lease expired and was reaped and claimed again.
	r, err := durable.Reap(ctx, s, 10, policy)
	require.NoError(t, err)
	assert.Equal(t, 1, r.Returned)
	again := claimAll(t, s, time.Minute)
	require.Len(t, again, 1)
	assert.Equal(t, 2, again[0].Attempt)
	assert.Greater(t, again[0].Token, ls[0].Token)

	assert.ErrorIs(t, s.Ack(ctx, store.LeaseRef{ID: "a", Token: ls[0].Token}), durable.ErrLeaseLost)
	assert.ErrorIs(t, s.Extend(ctx, store.ExtendParams{Lease: store.LeaseRef{ID: "a", Token: ls[0].Token}, By: time.Hour}), durable.ErrLeaseLost)
	err = s.Retry(ctx, store.RetryParams{Lease: store.LeaseRef{ID: "a", Token: ls[0].Token}})
	assert.ErrorIs(t, err, durable.ErrLeaseLost)
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, st.InFlight, "stale tokens changed nothing")
	require.NoError(t, s.Ack(ctx, store.LeaseRef{ID: "a", Token: again[0].Token}))
	assert.ErrorIs(t, s.Ack(ctx, store.LeaseRef{ID: "missing", Token: 1}), durable.ErrLeaseLost)
}

func TestRetry(t *testing.T) {
	s, c, _ := newTestStore(t)
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("a", time.Time{})}))
	ls := claimAll(t, s, time.Minute)
	err := s.Retry(ctx, store.RetryParams{Lease: store.LeaseRef{ID: "a", Token: ls[0].Token}, After: 150 * time.Millisecond})
	require.NoError(t, err)
	after := redisNow(t, c)
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, st.Pending)
	assert.WithinDuration(t, after.Add(150*time.Millisecond), st.NextDue, 100*time.Millisecond)
	assert.Empty(t, claimAll(t, s, time.Minute), "not before the delay")

	time.Sleep(st.NextDue.Sub(after) + 10*time.Millisecond)
	ls = claimAll(t, s, time.Minute)
	require.Len(t, ls, 1)
	assert.Equal(t, 2, ls[0].Attempt)
	err = s.Retry(ctx, store.RetryParams{Lease: store.LeaseRef{ID: "a", Token: ls[0].Token}})
	require.NoError(t, err)
	ls = claimAll(t, s, time.Minute)
	require.Len(t, ls, 1)
	assert.Equal(t, 3, ls[0].Attempt)

	before := redisNow(t, c)
	err = s.Retry(ctx, store.RetryParams{Lease: store.LeaseRef{ID: "a", Token: ls[0].Token}, Dead: true}) // attempt 3 of 3
	require.NoError(t, err)
	dl, err := leasetest.DeadLetters(ctx, s, 10)
	require.NoError(t, err)
	require.Len(t, dl, 1)
	assert.Equal(t, "a", dl[0].ID)
	assert.Equal(t, []byte("payload of a"), dl[0].Payload)
	assert.WithinDuration(t, before, dl[0].Due, time.Second, "a dead message's Due is when it died")
	st, err = s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, durable.Stats{Dead: 1}, st)
}

func TestExtend(t *testing.T) {
	s, _, _ := newTestStore(t)
	policy := durable.RetryPolicy{MaxAttempts: 10}
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("a", time.Time{})}))
	ls := claimAll(t, s, 50*time.Millisecond)
	require.NoError(t, s.Extend(ctx, store.ExtendParams{Lease: store.LeaseRef{ID: "a", Token: ls[0].Token}, By: time.Hour}))
	time.Sleep(60 * time.Millisecond)
	r, err := durable.Reap(ctx, s, 10, policy)
	require.NoError(t, err)
	assert.Zero(t, r.Returned)
	assert.WithinDuration(t, r.Now.Add(time.Hour), r.NextDeadline, time.Second)
	require.NoError(t, s.Ack(ctx, store.LeaseRef{ID: "a", Token: ls[0].Token}))
}

func TestReapBackoffAndDeath(t *testing.T) {
	s, _, _ := newTestStore(t)
	var asked []int
	policy := durable.RetryPolicy{MaxAttempts: 3, Backoff: func(a int) time.Duration {
		asked = append(asked, a)
		return time.Duration(a) * 20 * time.Millisecond
	}}
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("a", time.Time{})}))
	for attempt := 1; attempt <= 3; attempt++ {
		ls := waitClaim(t, s, 0, 1)
		assert.Equal(t, attempt, ls[0].Attempt)
		asked = nil
		r, err := durable.Reap(ctx, s, 10, policy)
		require.NoError(t, err)
		if attempt < 3 {
			assert.Equal(t, []int{attempt}, asked, "Backoff of the expired lease's attempt")
		} else {
			assert.Empty(t, asked, "no Backoff for a message that dies")
		}
		if attempt < 3 {
			// Now is read after the Retry that set the due time.
			delay := time.Duration(attempt) * 20 * time.Millisecond
			assert.Equal(t, durable.Reaped{Returned: 1, Now: r.Now, NextDue: r.NextDue}, r)
			assert.False(t, r.NextDue.After(r.Now.Add(delay)), "due the back-off after the retry's now")
			assert.WithinDuration(t, r.Now.Add(delay), r.NextDue, 10*time.Millisecond)
		} else {
			assert.Equal(t, durable.Reaped{Dead: 1, Now: r.Now}, r)
		}
	}
	dl, err := leasetest.DeadLetters(ctx, s, 10)
	require.NoError(t, err)
	require.Len(t, dl, 1)
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, durable.Stats{Dead: 1}, st)
}

func TestReapOrderAndLimit(t *testing.T) {
	s, _, _ := newTestStore(t)
	policy := durable.RetryPolicy{MaxAttempts: 5}
	var msgs []durable.Message
	n := MaxReap + 500
	for _, id := range seqIDs("m", n) {
		msgs = append(msgs, msg(id, time.Time{}))
	}
	require.NoError(t, s.Enqueue(ctx, msgs))
	ls := claimAll(t, s, 0)
	require.Len(t, ls, n)
	r, err := durable.Reap(ctx, s, 10, policy)
	require.NoError(t, err)
	assert.Equal(t, 10, r.Returned)
	assert.False(t, r.NextDue.After(r.Now), "returned with no delay")
	assert.False(t, r.NextDeadline.After(r.Now), "more leases to reap")
	r, err = durable.Reap(ctx, s, 1_000_000, policy)
	require.NoError(t, err)
	assert.Equal(t, MaxReap, r.Returned, "capped")
	r, err = durable.Reap(ctx, s, 1_000_000, policy)
	require.NoError(t, err)
	assert.Equal(t, n-10-MaxReap, r.Returned)
	assert.True(t, r.NextDeadline.IsZero())
	// Reaped in deadline order, and pending again in that order.
	again := claimAll(t, s, time.Minute)
	assert.Equal(t, ids(ls), ids(again))
}

func TestClaimLimit(t *testing.T) {
	s, _, _ := newTestStore(t)
	var msgs []durable.Message
	n := MaxClaim + 200
	for _, id := range seqIDs("m", n) {
		msgs = append(msgs, msg(id, time.Time{}))
	}
	require.NoError(t, s.Enqueue(ctx, msgs))
	c, err := s.Claim(ctx, store.ClaimParams{Limit: 0, Lease: time.Minute})
	require.NoError(t, err)
	assert.Empty(t, c.Leases)
	assert.False(t, c.NextDue.After(c.Now))
	c, err = s.Claim(ctx, store.ClaimParams{Limit: 7, Lease: time.Minute})
	require.NoError(t, err)
	assert.Len(t, c.Leases, 7)
	c, err = s.Claim(ctx, store.ClaimParams{Limit: 1_000_000, Lease: time.Minute})
	require.NoError(t, err)
	assert.Len(t, c.Leases, MaxClaim)
	c, err = s.Claim(ctx, store.ClaimParams{Limit: 1_000_000, Lease: time.Minute})
	require.NoError(t, err)
	assert.Len(t, c.Leases, n-MaxClaim-7)
	assert.True(t, c.NextDue.IsZero())
}

func TestRequeue(t *testing.T) {
	s, c, _ := newTestStore(t)
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("a", time.Time{}), msg("b", time.Time{})}))
	ls := claimAll(t, s, time.Minute)
	for _, l := range ls {
		err := s.Retry(ctx, store.RetryParams{Lease: store.LeaseRef{ID: l.ID, Token: l.Token}, Dead: true})
		require.NoError(t, err)
	}
	due := redisNow(t, c).Add(time.Hour + 7*time.Nanosecond)
	require.NoError(t, s.Requeue(ctx, store.RequeueParams{ID: "a", Due: due}))
	require.NoError(t, s.Requeue(ctx, store.RequeueParams{ID: "b", Due: time.Time{}}))
	assert.ErrorIs(t, s.Requeue(ctx, store.RequeueParams{ID: "b", Due: time.Time{}}), durable.ErrNotFound, "b is pending")
	assert.ErrorIs(t, s.Requeue(ctx, store.RequeueParams{ID: "missing", Due: time.Time{}}), durable.ErrNotFound)
	got := claimAll(t, s, time.Minute)
	require.Len(t, got, 1)
	assert.Equal(t, "b", got[0].ID)
	assert.Equal(t, 1, got[0].Attempt, "the attempt count starts again")
	assert.ErrorIs(t, s.Requeue(ctx, store.RequeueParams{ID: "b", Due: time.Time{}}), durable.ErrNotFound, "b is in flight")
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, durable.Stats{Pending: 1, InFlight: 1, NextDue: due.Truncate(time.Microsecond).Add(time.Microsecond)}, st)
}

func TestCancel(t *testing.T) {
	s, _, _ := newTestStore(t)
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("flight", time.Time{}), msg("dead", time.Time{})}))
	ls := claimAll(t, s, time.Minute)
	err := s.Retry(ctx, store.RetryParams{Lease: store.LeaseRef{ID: "dead", Token: ls[1].Token}, Dead: true})
	require.NoError(t, err)
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("pending", time.Now().Add(time.Hour))}))

	ok, err := s.Cancel(ctx, "pending")
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = s.Cancel(ctx, "dead")
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = s.Cancel(ctx, "flight")
	assert.ErrorIs(t, err, durable.ErrInFlight)
	assert.False(t, ok)
	ok, err = s.Cancel(ctx, "missing")
	require.NoError(t, err)
	assert.False(t, ok)
	ok, err = s.Cancel(ctx, "pending")
	require.NoError(t, err)
	assert.False(t, ok)

	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, durable.Stats{InFlight: 1}, st)
	require.NoError(t, s.Ack(ctx, store.LeaseRef{ID: "flight", Token: ls[0].Token}))
}

func TestDeadLettersOrder(t *testing.T) {
	s, _, _ := newTestStore(t, WithShards(1))
	var msgs []durable.Message
	for _, id := range []string{"c", "a", "b", "d"} {
		msgs = append(msgs, msg(id, time.Time{}))
	}
	require.NoError(t, s.Enqueue(ctx, msgs))
	ls := claimAll(t, s, time.Minute)
	// They die in this order, mostly within one microsecond.
	for _, i := range []int{2, 0, 3, 1} {
		err := s.Retry(ctx, store.RetryParams{Lease: store.LeaseRef{ID: ls[i].ID, Token: ls[i].Token}, Dead: true})
		require.NoError(t, err)
	}
	dl, err := leasetest.DeadLetters(ctx, s, 10)
	require.NoError(t, err)
	var got []string
	for _, m := range dl {
		got = append(got, m.ID)
	}
	assert.Equal(t, []string{"b", "c", "d", "a"}, got)
	dl, err = leasetest.DeadLetters(ctx, s, 2)
	require.NoError(t, err)
	assert.Len(t, dl, 2)
	dl, err = leasetest.DeadLetters(ctx, s, 0)
	require.NoError(t, err)
	assert.Empty(t, dl)
}

func TestInvalidMessagesWriteNothing(t *testing.T) {
	s, c, _ := newTestStore(t)
	before, err := c.DBSize(ctx).Result()
	require.NoError(t, err)
	for name, bad := range map[string]durable.Message{
		"empty ID":     {ID: ""},
		"long ID":      {ID: strings.Repeat("x", durable.MaxIDLen+1)},
		"long payload": {ID: "p", Payload: make([]byte, durable.MaxPayloadLen+1)},
	} {
		err := s.Enqueue(ctx, []durable.Message{msg("ok1", time.Time{}), bad, msg("ok2", time.Time{})})
		assert.ErrorIs(t, err, durable.ErrInvalidMessage, name)
	}
	after, err := c.DBSize(ctx).Result()
	require.NoError(t, err)
	assert.Equal(t, before, after)
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, durable.Stats{}, st)

	// The limits themselves are fine.
	require.NoError(t, s.Enqueue(ctx, []durable.Message{
		{ID: strings.Repeat("x", durable.MaxIDLen), Payload: make([]byte, durable.MaxPayloadLen)},
	}))
	ls := claimAll(t, s, time.Minute)
	require.Len(t, ls, 1)
	assert.Len(t, ls[0].Payload, durable.MaxPayloadLen)
}

func TestLargeBatch(t *testing.T) {
	s, c, _ := newTestStore(t)
	due := redisNow(t, c).Add(-time.Second)
	var msgs []durable.Message
	for _, id := range seqIDs("m", 2*maxEnqueueScript+500) {
		msgs = append(msgs, msg(id, due))
	}
	// Six payloads of 1 MiB: more than one script's bytes.
	for _, id := range seqIDs("big", 6) {
		msgs = append(msgs, durable.Message{ID: id, Payload: make([]byte, durable.MaxPayloadLen), Due: due})
	}
	// And a duplicate: the later one wins.
	msgs = append(msgs, durable.Message{ID: "m00000", Payload: []byte("last"), Due: due})
	require.NoError(t, s.Enqueue(ctx, msgs))
	ls := claimAll(t, s, time.Minute)
	want := make([]string, 0, len(msgs)-1)
	for _, m := range msgs[1:] {
		want = append(want, m.ID)
	}
	assert.Equal(t, want, ids(ls), "the batch's order, across scripts")
	assert.Equal(t, []byte("last"), ls[len(ls)-1].Payload)
}

func TestClosed(t *testing.T) {
	s, _, _ := newTestStore(t)
	_, _ = s.Wakeups()
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	assert.ErrorIs(t, s.Enqueue(ctx, []durable.Message{msg("a", time.Time{})}), durable.ErrClosed)
	_, err := s.Claim(ctx, store.ClaimParams{Limit: 1, Lease: time.Second})
	assert.ErrorIs(t, err, durable.ErrClosed)
	assert.ErrorIs(t, s.Ack(ctx, store.LeaseRef{ID: "a", Token: 1}), durable.ErrClosed)
	err = s.Retry(ctx, store.RetryParams{Lease: store.LeaseRef{ID: "a", Token: 1}, Dead: true})
	assert.ErrorIs(t, err, durable.ErrClosed)
	assert.ErrorIs(t, s.Extend(ctx, store.ExtendParams{Lease: store.LeaseRef{ID: "a", Token: 1}, By: time.Second}), durable.ErrClosed)
	_, err = s.Cancel(ctx, "a")
	assert.ErrorIs(t, err, durable.ErrClosed)
	_, err = durable.Reap(ctx, s, 1, durable.RetryPolicy{})
	assert.ErrorIs(t, err, durable.ErrClosed)
	_, err = leasetest.DeadLetters(ctx, s, 1)
	assert.ErrorIs(t, err, durable.ErrClosed)
	assert.ErrorIs(t, s.Requeue(ctx, store.RequeueParams{ID: "a", Due: time.Time{}}), durable.ErrClosed)
	_, err = s.Stats(ctx)
	assert.ErrorIs(t, err, durable.ErrClosed)
	closedWakeups, stop := s.Wakeups()
	defer stop()
	select {
	case <-closedWakeups:
		t.Fatal("a closed store woke")
	case <-time.After(20 * time.Millisecond):
	}
}

func TestNewChecks(t *testing.T) {
	srv := startRedis(t)
	c := srv.client(t)
	for _, name := range []string{"", "a{b", "a}"} {
		_, err := New(c, name)
		assert.ErrorIs(t, err, ErrQueueName, name)
	}
	_, err := New(c, "q", WithShards(0))
	assert.Error(t, err)
	_, err = New(nil, "q")
	assert.Error(t, err)

	// A queue keeps its shard count.
	s := openStore(t, c, "sharded", WithShards(3))
	require.NoError(t, s.Close())
	_, err = New(c, "sharded", WithShards(2))
	assert.ErrorIs(t, err, ErrShardCount)
	_, err = New(c, "sharded")
	assert.ErrorIs(t, err, ErrShardCount)
	openStore(t, c, "sharded", WithShards(3))
}

func TestEvictionPolicy(t *testing.T) {
	srv := startRedis(t)
	c := srv.client(t)
	for _, policy := range []string{"allkeys-lru", "volatile-lru", "allkeys-random"} {
		require.NoError(t, c.ConfigSet(ctx, "maxmemory-policy", policy).Err())
		_, err := New(c, "q")
		require.ErrorIs(t, err, ErrUnsafeEviction, policy)
		assert.Contains(t, err.Error(), policy)
		s, err := New(c, "q", WithEvictionAllowed())
		require.NoError(t, err, policy)
		require.NoError(t, s.Close())
	}
	require.NoError(t, c.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err())
	openStore(t, c, "q")

	// A Redis that hides CONFIG is accepted: the policy is unknown.
	hidden := startRedis(t, "--rename-command", "CONFIG", "")
	openStore(t, hidden.client(t), "q")
}

func TestRedisDown(t *testing.T) {
	s, _, srv := newTestStore(t)
	srv.kill()
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	err := s.Enqueue(short, []durable.Message{msg("a", time.Time{})})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "redisstore: enqueue")
	_, err = s.Claim(short, store.ClaimParams{Limit: 1, Lease: time.Second})
	require.Error(t, err)
}

// TestClaimAhead claims what is due within the horizon, each lease running
// from its message's due time, and leaves what is due after it.
func TestClaimAhead(t *testing.T) {
	s, c, _ := newTestStore(t)
	now := redisNow(t, c)
	soon, later := now.Add(30*time.Second), now.Add(2*time.Minute)
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("now", time.Time{}), msg("soon", soon), msg("later", later)}))

	cl, err := s.Claim(ctx, store.ClaimParams{Limit: 10, Lease: time.Second, Ahead: time.Minute})
	require.NoError(t, err)
	require.Len(t, cl.Leases, 2)
	assert.Equal(t, "now", cl.Leases[0].ID)
	assert.Equal(t, cl.Now.Add(time.Second), cl.Leases[0].Deadline, "a message already due: lease from now")
	assert.Equal(t, "soon", cl.Leases[1].ID)
	assert.Equal(t, soon.Truncate(time.Microsecond).Add(time.Second), cl.Leases[1].Deadline.Truncate(time.Microsecond),
		"a message claimed ahead: lease from its due time")
	assert.True(t, cl.NextDue.Equal(later.Truncate(time.Microsecond)) || cl.NextDue.Equal(later.Truncate(time.Microsecond).Add(time.Microsecond)),
		"next due %v, want %v", cl.NextDue, later)
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, st.Pending)
	assert.Equal(t, 2, st.InFlight)
}
