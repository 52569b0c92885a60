package durable

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// killAll makes each of ids die by a failed first attempt.
func killAll(t *testing.T, s *BoltStore, ids ...string) {
	t.Helper()
	ctx := context.Background()
	for _, id := range ids {
		require.NoError(t, s.Enqueue(ctx, []Message{{ID: id}}))
		c, err := s.Claim(ctx, ClaimParams{Limit: 1, Lease: time.Minute})
		require.NoError(t, err)
		require.Len(t, c.Leases, 1)
		require.NoError(t, s.Retry(ctx, id, c.Leases[0].Token, RetryParams{Dead: true}))
	}
}

func deadLetterIDs(t *testing.T, s *BoltStore) []string {
	t.Helper()
	dead, err := s.DeadLetters(context.Background(), 1000)
	require.NoError(t, err)
	var ids []string
	for _, m := range dead {
		ids = append(ids, m.ID)
	}
	return ids
}

func retentionStore(t *testing.T, opts ...Option) (*BoltStore, *clock.Mock) {
	t.Helper()
	mock := clock.NewMock()
	s, err := OpenBoltStore(filepath.Join(t.TempDir(), "q.db"), append([]Option{WithClock(mock)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	return s, mock
}

func TestBoltDeadLetterRetentionByCount(t *testing.T) {
	s, _ := retentionStore(t, WithDeadLetterRetention(3, 0))
	killAll(t, s, "d1", "d2", "d3", "d4", "d5")
	assert.Equal(t, []string{"d3", "d4", "d5"}, deadLetterIDs(t, s), "the oldest go first")
	st, err := s.Stats(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 3, st.Dead)
	// Nothing is left of the deleted ones: their IDs are free.
	found, err := s.Cancel(context.Background(), "d1")
	require.NoError(t, err)
	assert.False(t, found)
}

func TestBoltDeadLetterRetentionByAge(t *testing.T) {
	s, mock := retentionStore(t, WithDeadLetterRetention(0, time.Hour))
	killAll(t, s, "old1", "old2")
	mock.Add(30 * time.Minute)
	killAll(t, s, "mid")
	mock.Add(31 * time.Minute)
	killAll(t, s, "new")
	assert.Equal(t, []string{"mid", "new"}, deadLetterIDs(t, s), "a death trims the dead letters of more than an hour ago")
	st, err := s.Stats(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 2, st.Dead)
}

func TestBoltDeadLetterRetentionBoundsABurst(t *testing.T) {
	s, mock := retentionStore(t, WithDeadLetterRetention(10, 0))
	ctx := context.Background()
	var msgs []Message
	for i := range 300 {
		msgs = append(msgs, Message{ID: fmt.Sprintf("m%03d", i)})
	}
	require.NoError(t, s.Enqueue(ctx, msgs))
	c, err := s.Claim(ctx, ClaimParams{Limit: 300, Lease: time.Second})
	require.NoError(t, err)
	require.Len(t, c.Leases, 300)
	mock.Add(time.Second)
	for range 4 {
		_, err := Reap(ctx, s, reapBatch, RetryPolicy{MaxAttempts: 1})
		require.NoError(t, err)
	}
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, Stats{Dead: 10}, st)
	var want []string
	for i := 290; i < 300; i++ {
		want = append(want, fmt.Sprintf("m%03d", i))
	}
	assert.Equal(t, want, deadLetterIDs(t, s))
}

func TestDeadLetterRetentionDefaultsAndChecks(t *testing.T) {
	cfg := defaultConfig()
	assert.Equal(t, Retention{MaxCount: DefaultDeadLetterCount, MaxAge: DefaultDeadLetterAge}, cfg.retention)
	require.Error(t, Retention{MaxCount: -1}.Validate())
	require.Error(t, Retention{MaxAge: -time.Second}.Validate())
	require.NoError(t, Retention{}.Validate(), "zero: no limit")
	_, err := Open(filepath.Join(t.TempDir(), "q.db"), WithDeadLetterRetention(-1, 0))
	require.Error(t, err)
	_, err = OpenBoltStore(filepath.Join(t.TempDir(), "q.db"), WithDeadLetterRetention(0, -time.Second))
	require.Error(t, err)
}
