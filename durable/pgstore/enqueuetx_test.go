package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// TestEnqueueTxCommitted has a queue receive a message written with
// EnqueueTx in the transaction that also wrote a row of the
// application's, once it commits.
func TestEnqueueTxCommitted(t *testing.T) {
	pool := testPool(t)
	s := newStore(t)
	q := newQueue(t, s)
	_, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS tx_orders (id text PRIMARY KEY)`)
	require.NoError(t, err)

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `INSERT INTO tx_orders (id) VALUES ($1)`, s.Queue()+"/order-1")
	require.NoError(t, err)
	require.NoError(t, s.EnqueueTx(ctx, tx, durable.Message{ID: "timeout:order-1", Payload: []byte("order-1")}))
	_, err = s.Get(ctx, "timeout:order-1")
	require.ErrorIs(t, err, durable.ErrNotFound, "not visible before the commit")
	require.NoError(t, tx.Commit(ctx))

	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	d, err := q.Receive(rctx)
	require.NoError(t, err)
	assert.Equal(t, "timeout:order-1", d.ID)
	assert.Equal(t, "order-1", string(d.Payload))
	require.NoError(t, d.Ack(ctx))
}

// TestEnqueueTxRolledBack has a rolled-back EnqueueTx leave nothing, and
// wake no one.
func TestEnqueueTxRolledBack(t *testing.T) {
	pool, s, other, w := listeningPair(t)

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	require.NoError(t, s.EnqueueTx(ctx, tx, msg("a", time.Time{}), msg("b", time.Now().Add(time.Minute))))
	require.NoError(t, tx.Rollback(ctx))

	requireNoWakeup(t, w, 300*time.Millisecond, "after a rollback")
	assert.Zero(t, other.wake.received.Load(), "no notification")
	_, err = s.Get(ctx, "a")
	require.ErrorIs(t, err, durable.ErrNotFound)
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, durable.Stats{}, st)
	c, err := s.Claim(ctx, store.ClaimParams{Limit: 10, Lease: time.Minute, Ahead: time.Hour})
	require.NoError(t, err)
	assert.Empty(t, c.Leases)
}

// TestEnqueueTxWakesAtCommit has another store's Wakeups receive when the
// transaction commits, and not before.
func TestEnqueueTxWakesAtCommit(t *testing.T) {
	pool, s, other, w := listeningPair(t)

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	require.NoError(t, s.EnqueueTx(ctx, tx, msg("a", time.Now().Add(time.Hour))))
	requireNoWakeup(t, w, 300*time.Millisecond, "before the commit")
	require.NoError(t, tx.Commit(ctx))
	requireWakeup(t, w, "at the commit")
	assert.Equal(t, int64(1), other.wake.received.Load())
}

// TestEnqueueTxClosedTx gives EnqueueTx transactions that can write
// nothing: committed, rolled back, aborted by an error.
func TestEnqueueTxClosedTx(t *testing.T) {
	pool := testPool(t)
	s := newStore(t)

	for _, end := range []func(pgx.Tx) error{
		func(tx pgx.Tx) error { return tx.Commit(ctx) },
		func(tx pgx.Tx) error { return tx.Rollback(ctx) },
	} {
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		require.NoError(t, end(tx))
		err = s.EnqueueTx(ctx, tx, msg("a", time.Time{}))
		require.ErrorIs(t, err, ErrTxDone)
		require.ErrorIs(t, err, pgx.ErrTxClosed)
		assert.Contains(t, err.Error(), "already committed or rolled back")
	}

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SELECT 1/0`)
	require.Error(t, err)
	err = s.EnqueueTx(ctx, tx, msg("a", time.Time{}))
	require.ErrorIs(t, err, ErrTxDone)
	assert.Contains(t, err.Error(), "aborted")
	require.NoError(t, tx.Rollback(ctx))

	require.Error(t, s.EnqueueTx(ctx, nil, msg("a", time.Time{})), "a nil transaction")
	_, err = s.Get(ctx, "a")
	require.ErrorIs(t, err, durable.ErrNotFound)
}

// TestEnqueueTxInvalid checks the messages before writing any, as Enqueue
// does, and leaves the transaction usable.
func TestEnqueueTxInvalid(t *testing.T) {
	pool := testPool(t)
	s := newStore(t)
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	err = s.EnqueueTx(ctx, tx, msg("a", time.Time{}), durable.Message{ID: ""})
	require.ErrorIs(t, err, durable.ErrInvalidMessage)
	err = s.EnqueueTx(ctx, tx, msg("a", time.Time{}), msg("a", time.Time{}))
	require.ErrorIs(t, err, durable.ErrInvalidMessage, "two messages of one ID, as Queue.Enqueue refuses them")
	require.NoError(t, s.EnqueueTx(ctx, tx, msg("b", time.Time{})))
	require.NoError(t, tx.Commit(ctx))
	_, err = s.Get(ctx, "a")
	require.ErrorIs(t, err, durable.ErrNotFound)
	info, err := s.Get(ctx, "b")
	require.NoError(t, err)
	assert.Equal(t, durable.Pending, info.State)
}

// TestEnqueueTxRepeatableRead: in a transaction whose snapshot is older
// than the EnqueueTx, EnqueueTx notifies even for a message after the
// earliest pending one it sees, which may be long gone.
func TestEnqueueTxRepeatableRead(t *testing.T) {
	pool, s, _, w := listeningPair(t)
	now := dbNow(t)
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("first", now.Add(time.Minute))}))
	requireWakeup(t, w, "the first message")

	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SELECT count(*) FROM pg_class`) // takes the snapshot
	require.NoError(t, err)
	require.NoError(t, s.EnqueueTx(ctx, tx, msg("later", now.Add(time.Hour))))
	require.NoError(t, tx.Commit(ctx))
	requireWakeup(t, w, "a repeatable-read transaction notifies")

	tx, err = pool.Begin(ctx)
	require.NoError(t, err)
	require.NoError(t, s.EnqueueTx(ctx, tx, msg("latest", now.Add(2*time.Hour))))
	require.NoError(t, tx.Commit(ctx))
	requireNoWakeup(t, w, 300*time.Millisecond, "read committed: not the earliest")
}
