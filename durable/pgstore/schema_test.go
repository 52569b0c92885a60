package pgstore

import (
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
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

// TestSchemaMigratesVersion3 has New migrate tables of version 3 that
// hold messages: they gain the columns of a message's kind, max attempts
// and timeout without a rewrite of the table or a change of its indexes,
// and the messages written before read as zero values in every state.
func TestSchemaMigratesVersion3(t *testing.T) {
	pool := testPool(t)
	schema := "v3_" + freshQueue()
	n := newNames(schema)
	createVersion(t, pool, n, 3)

	_, err := New(ctx, pool, "q", WithSchema(schema), WithoutMigrate())
	require.ErrorIs(t, err, ErrSchemaTooOld, "version 3 without migrating")
	indexes := func() []string {
		var defs []string
		require.NoError(t, pool.QueryRow(ctx, `SELECT array_agg(indexdef ORDER BY indexname) FROM pg_indexes
			WHERE schemaname = $1 AND tablename = $2`, schema, messagesTable).Scan(&defs))
		return defs
	}
	file := func() (f uint32) {
		require.NoError(t, pool.QueryRow(ctx, `SELECT relfilenode FROM pg_class WHERE oid = $1::regclass`, n.messages).Scan(&f))
		return f
	}
	indexesBefore, fileBefore := indexes(), file()

	s := openStore(t, pool, "q", WithSchema(schema))
	assert.Equal(t, indexesBefore, indexes(), "the indexes are defined as those of version 3")
	assert.Equal(t, fileBefore, file(), "the table is not rewritten")
	var v int
	require.NoError(t, pool.QueryRow(ctx, n.expand(`SELECT max(version) FROM {V}`)).Scan(&v))
	assert.Equal(t, SchemaVersion, v)

	zero := func(what string, kind string, maxAttempts int, timeout time.Duration) {
		t.Helper()
		assert.Empty(t, kind, "%s: Kind", what)
		assert.Zero(t, maxAttempts, "%s: MaxAttempts", what)
		assert.Zero(t, timeout, "%s: Timeout", what)
	}
	for _, id := range []string{"pending", "inflight", "dead"} {
		info := getInfo(t, s, id)
		zero(id, info.Kind, info.MaxAttempts, info.Timeout)
	}
	c, err := s.Claim(ctx, store.ClaimParams{Limit: 10, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, c.Leases, 1)
	l := c.Leases[0]
	assert.Equal(t, "pending", l.ID)
	zero("claimed", l.Kind, l.MaxAttempts, l.Timeout)
	require.NoError(t, s.Confirm(ctx, store.ConfirmParams{Lease: l.Ref(), By: time.Hour}))
	require.NoError(t, s.Ack(ctx, l.Ref()))

	// Written from now on, with them.
	m := durable.Message{ID: "pending", Kind: "k", Payload: []byte("p"), MaxAttempts: 3, Timeout: time.Second + 1}
	require.NoError(t, s.Enqueue(ctx, []durable.Message{m}))
	info := getInfo(t, s, "pending")
	assert.Equal(t, []any{m.Kind, m.MaxAttempts, m.Timeout}, []any{info.Kind, info.MaxAttempts, info.Timeout})
}

// createVersion creates the tables of version, in the schema of n, with
// a message of each state as that version wrote them, in queue "q".
func createVersion(t *testing.T, pool *pgxpool.Pool, n names, version int) {
	t.Helper()
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `CREATE SCHEMA `+n.schema)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, n.expand(versionTableSQL))
	require.NoError(t, err)
	for v := range version {
		for _, stmt := range migrations[v] {
			_, err := tx.Exec(ctx, n.expand(stmt))
			require.NoError(t, err, stmt)
		}
		_, err = tx.Exec(ctx, n.expand(recordVersionSQL), v+1)
		require.NoError(t, err)
	}
	_, err = tx.Exec(ctx, n.expand(`INSERT INTO {T} (queue, id, payload, state, due, seq, deadline, died_at, attempt, token, enqueued_at)
		VALUES ('q', 'pending', 'p', 1, now() - interval '1 hour', nextval({SEQ}), NULL, NULL, 0, 0, now()),
			('q', 'inflight', 'p', 2, now(), nextval({SEQ}), now() + interval '1 hour', NULL, 1, nextval({TOK}), now()),
			('q', 'dead', 'p', 3, now(), nextval({SEQ}), NULL, now(), 1, nextval({TOK}), now())`))
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
}

// TestSchemaMigratesVersion4 has New migrate tables of version 4 that
// hold messages: the queue's name is then compared byte by byte (COLLATE
// "C"), without a rewrite of the table, and every message is still
// there, found through the indexes.
func TestSchemaMigratesVersion4(t *testing.T) {
	pool := testPool(t)
	schema := "v4_" + freshQueue()
	n := newNames(schema)
	createVersion(t, pool, n, 4)
	collation := func() (c string) {
		require.NoError(t, pool.QueryRow(ctx, `SELECT coalesce(collation_name, '') FROM information_schema.columns
			WHERE table_schema = $1 AND table_name = $2 AND column_name = 'queue'`, schema, messagesTable).Scan(&c))
		return c
	}
	file := func() (f uint32) {
		require.NoError(t, pool.QueryRow(ctx, `SELECT relfilenode FROM pg_class WHERE oid = $1::regclass`, n.messages).Scan(&f))
		return f
	}
	assert.Empty(t, collation(), "version 4: the database's collation")
	fileBefore := file()

	s := openStore(t, pool, "q", WithSchema(schema))
	assert.Equal(t, "C", collation())
	assert.Equal(t, fileBefore, file(), "the table is not rewritten")
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, [3]int{1, 1, 1}, [3]int{st.Pending, st.InFlight, st.Dead})
	c, err := s.Claim(ctx, store.ClaimParams{Limit: 10, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, c.Leases, 1)
	assert.Equal(t, "pending", c.Leases[0].ID)
	require.NoError(t, s.Ack(ctx, c.Leases[0].Ref()))
}
