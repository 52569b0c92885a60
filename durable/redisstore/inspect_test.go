package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// TestMessagesOfTheFormerLayout writes messages as the version before
// EnqueuedAt and the error hash wrote them (meta without the enqueued
// time, with and without a nonce), and checks that they are read, claimed
// and replaced as before, with no EnqueuedAt until an Enqueue replaces
// them.
func TestMessagesOfTheFormerLayout(t *testing.T) {
	s, c, _ := newTestStore(t)
	now := redisNow(t, c)
	score := now.Add(-time.Second).UnixMicro()
	for i, m := range []struct{ id, meta string }{
		{"with-nonce", "p|1000%016x|0|0|abc123"},
		{"without-nonce", "p|1000%016x|0|0"},
	} {
		pre := sprintfSeq(m.meta, i+1)
		require.NoError(t, c.ZAdd(ctx, "tw:{q}:pending", redisZ(score, pre[2:22]+m.id)).Err())
		require.NoError(t, c.HSet(ctx, "tw:{q}:meta", m.id, pre).Err())
		require.NoError(t, c.HSet(ctx, "tw:{q}:payload", m.id, "old "+m.id).Err())
	}
	require.NoError(t, c.Set(ctx, "tw:{q}:seq", 2, 0).Err())

	for _, id := range []string{"with-nonce", "without-nonce"} {
		info, err := s.Get(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, durable.Pending, info.State)
		assert.Equal(t, "old "+id, string(info.Payload))
		assert.True(t, info.Due.Equal(time.UnixMicro(score)), "%v", info.Due)
		assert.True(t, info.EnqueuedAt.IsZero(), "unknown for a message of the former layout")
	}
	list, _, err := s.List(ctx, store.ListParams{State: durable.Pending, Cursor: "", Limit: 10})
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, "with-nonce", list[0].ID)

	cl, err := s.Claim(ctx, store.ClaimParams{Limit: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, cl.Leases, 1)
	err = s.Retry(ctx, store.RetryParams{Lease: store.LeaseRef{ID: cl.Leases[0].ID, Token: cl.Leases[0].Token}, Dead: true, Error: "failed once"})
	require.NoError(t, err)
	info, err := s.Get(ctx, "with-nonce")
	require.NoError(t, err)
	assert.Equal(t, durable.Dead, info.State)
	assert.Equal(t, "failed once", info.LastError)

	require.NoError(t, s.Enqueue(ctx, []durable.Message{{ID: "without-nonce"}}))
	info, err = s.Get(ctx, "without-nonce")
	require.NoError(t, err)
	assert.False(t, info.EnqueuedAt.IsZero(), "an Enqueue that replaces it gives it an EnqueuedAt")

	// What this version writes in meta, the former version's scripts
	// parse (their pattern): processes of both can share a queue.
	for _, id := range []string{"with-nonce", "without-nonce"} {
		meta, err := c.HGet(ctx, "tw:{q}:meta", id).Result()
		require.NoError(t, err)
		assert.Regexp(t, `^[a-z]\|[^|]*\|[0-9]+\|[0-9]+\|[0-9a-f]*$`, meta)
	}
}

// TestRunKeepsTheErrorTextInRedis fails a message's first attempt through
// Run on a queue over Redis: the second attempt's Delivery.LastError, and
// then Get, show the handler's error text, kept in Redis.
func TestRunKeepsTheErrorTextInRedis(t *testing.T) {
	srv := startRedis(t)
	q := newTestQueue(t, srv, "q", nil, durable.WithBackoff(func(int) time.Duration { return time.Millisecond }),
		durable.WithMaxAttempts(2))
	require.NoError(t, q.Enqueue(ctx, durable.Message{ID: "a"}))
	var (
		mu   sync.Mutex
		seen []string
	)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- q.Run(runCtx, 1, func(ctx context.Context, d *durable.Delivery) error {
			mu.Lock()
			seen = append(seen, d.LastError)
			mu.Unlock()
			return errors.New("attempt failed")
		})
	}()
	require.Eventually(t, func() bool {
		st, err := q.Stats(ctx)
		require.NoError(t, err)
		return st.Dead == 1
	}, 10*time.Second, time.Millisecond)
	cancel()
	require.NoError(t, <-done)
	mu.Lock()
	assert.Equal(t, []string{"", "attempt failed"}, seen)
	mu.Unlock()

	// Another process reads it from Redis.
	other := newTestQueue(t, srv, "q", nil)
	info, err := other.Get(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, durable.Dead, info.State)
	assert.Equal(t, "attempt failed", info.LastError)
	assert.Equal(t, 2, info.Attempt)
	assert.False(t, info.DiedAt.IsZero())
}

// sprintfSeq fills the sequence number of a meta of the former layout.
func sprintfSeq(meta string, seq int) string { return fmt.Sprintf(meta, seq) }

func redisZ(score int64, member string) redis.Z {
	return redis.Z{Score: float64(score), Member: member}
}

// TestAckAndCancelDeleteTheErrorText checks that nothing of a message is
// left in the error and enqueued hashes once it is acked or cancelled.
func TestAckAndCancelDeleteTheErrorText(t *testing.T) {
	s, c, _ := newTestStore(t)
	require.NoError(t, s.Enqueue(ctx, []durable.Message{{ID: "acked"}, {ID: "cancelled"}}))
	first, err := s.Claim(ctx, store.ClaimParams{Limit: 2, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, first.Leases, 2)
	for _, l := range first.Leases {
		err := s.Retry(ctx, store.RetryParams{Lease: store.LeaseRef{ID: l.ID, Token: l.Token}, Error: "failed"})
		require.NoError(t, err)
	}
	assert.Equal(t, int64(2), hashLen(t, c, s, keyError))
	assert.Equal(t, int64(2), hashLen(t, c, s, keyEnqueued))
	found, err := s.Cancel(ctx, "cancelled")
	require.NoError(t, err)
	require.True(t, found)
	cl, err := s.Claim(ctx, store.ClaimParams{Limit: 2, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, cl.Leases, 1)
	assert.Equal(t, "failed", cl.Leases[0].LastError)
	require.NoError(t, s.Ack(ctx, store.LeaseRef{ID: "acked", Token: cl.Leases[0].Token}))
	assert.Zero(t, hashLen(t, c, s, keyError))
	assert.Zero(t, hashLen(t, c, s, keyEnqueued))
}
