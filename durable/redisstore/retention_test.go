package redisstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/seed64e23a5c/timingwheel/internal/leasetest"
)

// killAll makes each of ids die by a failed first attempt, with the error
// text "killed".
func killAll(t *testing.T, s *Store, r store.Retention, ids ...string) {
	t.Helper()
	for _, id := range ids {
		require.NoError(t, s.Enqueue(ctx, []durable.Message{msg(id, time.Time{})}))
		c, err := s.Claim(ctx, store.ClaimParams{Limit: 1, Lease: time.Minute})
		require.NoError(t, err)
		require.Len(t, c.Leases, 1)
		err = s.Retry(ctx, store.RetryParams{Lease: store.LeaseRef{ID: id, Token: c.Leases[0].Token}, Dead: true, Error: "killed", Retention: r})
		require.NoError(t, err)
	}
}

// hashLen is the number of fields of the queue's hash key (meta, payload,
// error, enqueued, fields).
func hashLen(t *testing.T, c redis.UniversalClient, s *Store, key int) int64 {
	t.Helper()
	n, err := c.HLen(context.Background(), s.shards[0].keys[key]).Result()
	require.NoError(t, err)
	return n
}

func TestDeadLetterRetentionByCount(t *testing.T) {
	s, c, _ := newTestStore(t)
	killAll(t, s, store.Retention{MaxCount: 3}, "d1", "d2", "d3", "d4", "d5")
	assert.Equal(t, []string{"d3", "d4", "d5"}, leasetest.DeadIDs(t, s), "the oldest go first")
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, st.Dead)
	assert.Equal(t, int64(3), hashLen(t, c, s, keyMeta), "nothing left of the deleted ones")
	assert.Equal(t, int64(3), hashLen(t, c, s, keyPayload))
	assert.Equal(t, int64(3), hashLen(t, c, s, keyError))
	assert.Equal(t, int64(3), hashLen(t, c, s, keyEnqueued))
}

func TestDeadLetterRetentionByAge(t *testing.T) {
	s, c, _ := newTestStore(t)
	r := store.Retention{MaxAge: 200 * time.Millisecond}
	killAll(t, s, r, "old1", "old2")
	past := redisNow(t, c).Add(250 * time.Millisecond)
	for redisNow(t, c).Before(past) {
		time.Sleep(10 * time.Millisecond)
	}
	killAll(t, s, r, "new")
	assert.Equal(t, []string{"new"}, leasetest.DeadIDs(t, s), "a death trims the dead letters past the age")
	assert.Equal(t, int64(1), hashLen(t, c, s, keyMeta))
	assert.Equal(t, int64(1), hashLen(t, c, s, keyError))
	assert.Equal(t, int64(1), hashLen(t, c, s, keyEnqueued))
}

func TestDeadLetterRetentionBoundsABurst(t *testing.T) {
	s, _, _ := newTestStore(t)
	policy := durable.RetryPolicy{MaxAttempts: 1, Retention: store.Retention{MaxCount: 10}}
	var ids []string
	for i := range 300 {
		ids = append(ids, fmt.Sprintf("m%03d", i))
	}
	require.NoError(t, s.Enqueue(ctx, msgsOf(ids)))
	c, err := s.Claim(ctx, store.ClaimParams{Limit: 300, Lease: time.Millisecond})
	require.NoError(t, err)
	require.Len(t, c.Leases, 300)
	time.Sleep(5 * time.Millisecond) // past the leases' deadline
	for {
		r, err := durable.Reap(ctx, s, MaxReap, policy)
		require.NoError(t, err)
		if r.Dead == 0 {
			break
		}
	}
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.LessOrEqual(t, st.Dead, 10+100, "each reap trims up to 100")
	_, err = durable.Reap(ctx, s, MaxReap, policy)
	require.NoError(t, err)
	st, err = s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 10, st.Dead)
	assert.Equal(t, ids[290:], leasetest.DeadIDs(t, s))
}

func msgsOf(ids []string) []durable.Message {
	ms := make([]durable.Message, len(ids))
	for i, id := range ids {
		ms[i] = durable.Message{ID: id}
	}
	return ms
}
