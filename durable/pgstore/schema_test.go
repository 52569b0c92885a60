package pgstore

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// TestSchemaFresh has New create its tables in a schema of its own, and
// the store work there, apart from the queue of the same name in public.
func TestSchemaFresh(t *testing.T) {
	pool := testPool(t)
	schema := "Fresh Schema " + freshQueue()
	queue := freshQueue()
	s := openStore(t, pool, queue, WithSchema(schema))
	public := openStore(t, pool, queue)
	assert.Equal(t, schema, s.Schema())
	for _, name := range []string{messagesTable, versionTable, seqSequence, tokenSequence} {
		var exists bool
		require.NoError(t, pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`,
			`"`+schema+`".`+name).Scan(&exists))
		assert.True(t, exists, name)
	}
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("a", time.Time{})}))
	_, err := public.Get(ctx, "a")
	require.ErrorIs(t, err, durable.ErrNotFound, "another schema, another table")
	c, err := s.Claim(ctx, store.ClaimParams{Limit: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, c.Leases, 1)
	require.NoError(t, s.Ack(ctx, store.LeaseRef{ID: "a", Token: c.Leases[0].Token}))
}

// TestSchemaTooNew has New, Migrate and New without migrating refuse
// tables of a version this package does not know.
func TestSchemaTooNew(t *testing.T) {
	pool := testPool(t)
	schema := "future_" + freshQueue()
	require.NoError(t, Migrate(ctx, pool, WithSchema(schema)))
	_, err := pool.Exec(ctx, `INSERT INTO `+schema+`.timingwheel_schema_version (version) VALUES ($1)`, SchemaVersion+1)
	require.NoError(t, err)
	_, err = New(ctx, pool, "q", WithSchema(schema))
	require.ErrorIs(t, err, ErrSchemaTooNew)
	require.ErrorIs(t, Migrate(ctx, pool, WithSchema(schema)), ErrSchemaTooNew)
	_, err = New(ctx, pool, "q", WithSchema(schema), WithoutMigrate())
	require.ErrorIs(t, err, ErrSchemaTooNew)
}

// TestSchemaWithoutMigrate has New without migrating refuse absent
// tables, and take those that MigrationSQL made.
func TestSchemaWithoutMigrate(t *testing.T) {
	pool := testPool(t)
	schema := "own_migrations_" + freshQueue()
	_, err := New(ctx, pool, "q", WithSchema(schema), WithoutMigrate())
	require.ErrorIs(t, err, ErrSchemaTooOld)
	var exists bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&exists))
	require.False(t, exists, "WithoutMigrate creates nothing")

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `CREATE SCHEMA `+schema)
	require.NoError(t, err)
	for _, stmt := range MigrationSQL(schema) {
		_, err := tx.Exec(ctx, stmt)
		require.NoError(t, err, stmt)
	}
	for _, stmt := range MigrationSQL(schema) {
		_, err := tx.Exec(ctx, stmt)
		require.NoError(t, err, "again: %s", stmt)
	}
	require.NoError(t, tx.Commit(ctx))

	s := openStore(t, pool, "q", WithSchema(schema), WithoutMigrate())
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("a", time.Time{})}))
	var v int
	require.NoError(t, pool.QueryRow(ctx, `SELECT max(version) FROM `+schema+`.timingwheel_schema_version`).Scan(&v))
	assert.Equal(t, SchemaVersion, v)
}

// TestSchemaConcurrentNew has processes that start at once create the
// tables of a fresh schema once, each New succeeding.
func TestSchemaConcurrentNew(t *testing.T) {
	pool := testPool(t)
	schema := "concurrent_" + freshQueue()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			s, err := New(ctx, pool, freshQueue(), WithSchema(schema))
			if err == nil {
				_ = s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM `+schema+`.timingwheel_schema_version`).Scan(&n))
	assert.Equal(t, SchemaVersion, n)
}
