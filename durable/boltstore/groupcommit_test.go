package boltstore

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGroupCommitSharesFsyncs has 64 goroutines enqueue at once: their
// writes must share commits (one fsync each), and all be there.
func TestGroupCommitSharesFsyncs(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "q.db"))
	require.NoError(t, err)
	defer s.Close()
	const producers, each = 64, 20
	ctx := context.Background()
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range each {
				assert.NoError(t, s.Enqueue(ctx, []store.Message{{ID: fmt.Sprint(p, "-", i)}}))
			}
		})
	}
	wg.Wait()
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, producers*each, st.Pending)
	commits := s.Commits()
	t.Logf("%d enqueues in %d commits", producers*each, commits)
	assert.Less(t, commits, int64(producers*each/4), "concurrent enqueues did not share commits")
}

// TestFailingOpDoesNotFailItsBatch checks that an op whose precondition
// fails (a stale lease) leaves the other ops of its transaction alone.
func TestFailingOpDoesNotFailItsBatch(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "q.db"))
	require.NoError(t, err)
	defer s.Close()
	ctx := context.Background()
	require.NoError(t, s.Enqueue(ctx, []store.Message{{ID: "a"}, {ID: "b"}}))
	c, err := s.Claim(ctx, store.ClaimParams{Limit: 2, Lease: time.Second})
	require.NoError(t, err)
	require.Len(t, c.Leases, 2)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Go(func() { errs[0] = s.Ack(ctx, store.LeaseRef{ID: "a", Token: c.Leases[0].Token + 100}) })
	wg.Go(func() { errs[1] = s.Ack(ctx, c.Leases[1].Ref()) })
	wg.Wait()
	require.ErrorIs(t, errs[0], store.ErrLeaseLost)
	require.NoError(t, errs[1])
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, st.InFlight, "a stays in flight, b is gone")
}
