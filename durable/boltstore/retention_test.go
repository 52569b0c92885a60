package boltstore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// killAll makes each of ids die by a failed first attempt, under r.
func killAll(t *testing.T, s *Store, r store.Retention, ids ...string) {
	t.Helper()
	ctx := context.Background()
	for _, id := range ids {
		require.NoError(t, s.Enqueue(ctx, []store.Message{{ID: id}}))
		c, err := s.Claim(ctx, store.ClaimParams{Limit: 1, Lease: time.Minute})
		require.NoError(t, err)
		require.Len(t, c.Leases, 1)
		require.NoError(t, s.Retry(ctx, store.RetryParams{Lease: c.Leases[0].Ref(), Dead: true, Retention: r}))
	}
}

func deadLetterIDs(t *testing.T, s *Store) []string {
	t.Helper()
	dead, _, err := s.List(context.Background(), store.ListParams{State: store.Dead, Limit: 1000})
	require.NoError(t, err)
	var ids []string
	for _, m := range dead {
		ids = append(ids, m.ID)
	}
	return ids
}

func retentionStore(t *testing.T) (*Store, *clock.Mock) {
	t.Helper()
	mock := clock.NewMock()
	s, err := Open(filepath.Join(t.TempDir(), "q.db"), WithClock(mock))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	return s, mock
}

func TestBoltDeadLetterRetentionByCount(t *testing.T) {
	s, _ := retentionStore(t)
	killAll(t, s, store.Retention{MaxCount: 3}, "d1", "d2", "d3", "d4", "d5")
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
	s, mock := retentionStore(t)
	r := store.Retention{MaxAge: time.Hour}
	killAll(t, s, r, "old1", "old2")
	mock.Add(30 * time.Minute)
	killAll(t, s, r, "mid")
	mock.Add(31 * time.Minute)
	killAll(t, s, r, "new")
	assert.Equal(t, []string{"mid", "new"}, deadLetterIDs(t, s), "a death trims the dead letters of more than an hour ago")
	st, err := s.Stats(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 2, st.Dead)
}

// TestBoltDeadLetterRetentionBoundsABurst: a death trims at most
// store.MaxTrim dead letters, and deaths keep up.
func TestBoltDeadLetterRetentionBoundsABurst(t *testing.T) {
	s, _ := retentionStore(t)
	ctx := context.Background()
	var msgs []store.Message
	for i := range 300 {
		msgs = append(msgs, store.Message{ID: fmt.Sprintf("m%03d", i)})
	}
	require.NoError(t, s.Enqueue(ctx, msgs))
	c, err := s.Claim(ctx, store.ClaimParams{Limit: 300, Lease: time.Second})
	require.NoError(t, err)
	require.Len(t, c.Leases, 300)
	for i := range c.Leases[:290] {
		require.NoError(t, s.Retry(ctx, store.RetryParams{Lease: c.Leases[i].Ref(), Dead: true}))
	}
	for i := range c.Leases[290:] {
		require.NoError(t, s.Retry(ctx, store.RetryParams{Lease: c.Leases[290+i].Ref(), Dead: true, Retention: store.Retention{MaxCount: 10}}))
	}
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, store.Stats{Dead: 10}, st)
	var want []string
	for i := 290; i < 300; i++ {
		want = append(want, fmt.Sprintf("m%03d", i))
	}
	assert.Equal(t, want, deadLetterIDs(t, s))
}
