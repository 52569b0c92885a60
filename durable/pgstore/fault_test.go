package pgstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/seed64e23a5c/timingwheel/internal/pgtest"
)

// TestBadArguments: a nil pool, a bad queue name or bad options give an
// error, not a panic.
func TestBadArguments(t *testing.T) {
	_, err := New(ctx, nil, "q")
	require.Error(t, err)
	require.Error(t, Migrate(ctx, nil))
	pool := testPool(t)
	for _, name := range []string{"", "a\x00b", "\xff"} {
		_, err := New(ctx, pool, name)
		require.ErrorIs(t, err, ErrQueueName, "%q", name)
	}
	for _, opt := range []Option{WithSchema(""), WithSchema("a\x00b"), WithSchema(strings.Repeat("s", 64)),
		WithSafetyPoll(-time.Second)} {
		_, err := New(ctx, pool, "q", opt)
		require.Error(t, err)
	}
}

// TestAfterClose: EnqueueTx after Close returns ErrClosed too (the suite
// checks the Store's methods).
func TestAfterClose(t *testing.T) {
	pool := testPool(t)
	s := newStore(t)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "twice")
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	require.ErrorIs(t, s.EnqueueTx(ctx, tx, msg("a", time.Time{})), durable.ErrClosed)
}

// TestCancelledContext: a call with a context that is done returns at
// once with its error.
func TestCancelledContext(t *testing.T) {
	s := newStore(t)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	start := time.Now()
	require.ErrorIs(t, s.Enqueue(cctx, []durable.Message{msg("a", time.Time{})}), context.Canceled)
	_, err := s.Claim(cctx, store.ClaimParams{Limit: 1, Lease: time.Minute})
	require.ErrorIs(t, err, context.Canceled)
	_, err = s.Get(cctx, "a")
	require.ErrorIs(t, err, context.Canceled)
	assert.Less(t, time.Since(start), time.Second)
	_, err = s.Get(ctx, "a")
	require.ErrorIs(t, err, durable.ErrNotFound, "nothing written")
}

// TestDatabaseGone stops a server of the test's own: calls fail within
// their context's deadline instead of hanging, and work again once it is
// back (the pool opens new connections).
func TestDatabaseGone(t *testing.T) {
	srv := pgtest.ForTest(t) // a server of its own: the test stops it
	pool, err := newPool(srv)
	require.NoError(t, err)
	defer pool.Close()
	s := openStore(t, pool, "q", WithSafetyPoll(0))
	w, stop := s.Wakeups()
	defer stop()
	waitListening(t, s, w)
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("a", time.Time{})}))

	require.NoError(t, srv.Stop("immediate"))
	for name, call := range map[string]func(context.Context) error{
		"Enqueue": func(c context.Context) error { return s.Enqueue(c, []durable.Message{msg("b", time.Time{})}) },
		"Claim": func(c context.Context) error {
			_, err := s.Claim(c, store.ClaimParams{Limit: 1, Lease: time.Minute})
			return err
		},
		"Stats": func(c context.Context) error { _, err := s.Stats(c); return err },
	} {
		c, cancel := context.WithTimeout(ctx, 3*time.Second)
		start := time.Now()
		err := call(c)
		cancel()
		require.Error(t, err, name)
		assert.Less(t, time.Since(start), 4*time.Second, name)
	}
	require.Eventually(t, func() bool { return s.wake.listening.Load() == 0 }, 10*time.Second, time.Millisecond,
		"the listening connection is gone")

	require.NoError(t, srv.StartAgain())
	require.Eventually(t, func() bool { return s.wake.listening.Load() == 1 }, 20*time.Second, 10*time.Millisecond,
		"listening again")
	requireWakeup(t, w, "on listening again")
	var c store.Claimed
	require.Eventually(t, func() bool {
		c, err = s.Claim(ctx, store.ClaimParams{Limit: 1, Lease: time.Minute})
		return err == nil
	}, 20*time.Second, 10*time.Millisecond, "the pool connects again")
	require.Len(t, c.Leases, 1, "the message committed before the crash")
	assert.Equal(t, "a", c.Leases[0].ID)

	// An Ack that returned nil survives a crash too.
	require.NoError(t, s.Ack(ctx, store.LeaseRef{ID: "a", Token: c.Leases[0].Token}))
	require.NoError(t, srv.Restart("immediate"))
	require.Eventually(t, func() bool {
		_, err = s.Get(ctx, "a")
		return errors.Is(err, durable.ErrNotFound)
	}, 20*time.Second, 10*time.Millisecond, "acked for good")
}
