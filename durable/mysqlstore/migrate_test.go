package mysqlstore

import (
	"database/sql"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// newDatabase creates the database name on the tests' server and returns
// a *sql.DB on it, closed by the test's cleanup.
func newDatabase(t *testing.T, name string) *sql.DB {
	t.Helper()
	testDBHandle(t) // skips without MariaDB
	require.NoError(t, server.CreateDB(name))
	db, err := sql.Open("mysql", server.DSN(name))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// createVersion1 creates the tables of version 1 on db, as the package's
// version 1 did, and writes a pending, an in-flight and a dead message
// of queue in its columns.
func createVersion1(t *testing.T, db *sql.DB, queue string) {
	t.Helper()
	_, err := db.ExecContext(ctx, expand(versionTableSQL))
	require.NoError(t, err)
	for _, stmt := range migrations[0] {
		_, err := db.ExecContext(ctx, expand(stmt))
		require.NoError(t, err)
	}
	_, err = db.ExecContext(ctx, expand(recordVersionSQL), 1)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, expand(`INSERT INTO {T}
	(queue, id, payload, state, ts, seq, attempt, token, held, last_error, enqueued_at) VALUES
	(?, 'pending', 'p', 1, {NOW} - INTERVAL 1 SECOND, {SEQ}, 0, {SEQ}, 0, '', {NOW}),
	(?, 'inflight', 'f', 2, {NOW} + INTERVAL 1 HOUR, {SEQ} + 1, 1, {SEQ} + 1, 0, '', {NOW}),
	(?, 'dead', 'd', 3, {NOW}, {SEQ} + 2, 3, {SEQ} + 2, 0, 'boom', {NOW})`), queue, queue, queue)
	require.NoError(t, err)
}

// requireVersion checks the version the tables of db record.
func requireVersion(t *testing.T, db *sql.DB, want int) {
	t.Helper()
	v, err := version(ctx, db)
	require.NoError(t, err)
	require.Equal(t, want, v)
}

// Tables of version 1 are migrated by New, once for processes that start
// together: their rows keep everything, and read no Kind, MaxAttempts
// nor Timeout; a store WithoutMigrate refuses them until then.
func TestMigrateFromVersion1(t *testing.T) {
	db := newDatabase(t, "tw_v1")
	const queue = "old"
	createVersion1(t, db, queue)
	_, err := New(ctx, db, queue, WithoutMigrate())
	require.ErrorIs(t, err, ErrSchemaTooOld)
	requireVersion(t, db, 1)

	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			s, err := New(ctx, db, queue)
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
	requireVersion(t, db, SchemaVersion)
	s := openStore(t, db, queue, WithoutMigrate())

	for _, want := range []store.Info{{ID: "pending", Payload: []byte("p"), State: store.Pending},
		{ID: "inflight", Payload: []byte("f"), State: store.InFlight, Attempt: 1},
		{ID: "dead", Payload: []byte("d"), State: store.Dead, Attempt: 3, LastError: "boom"}} {
		id := want.ID
		info, err := s.Get(ctx, id)
		require.NoError(t, err, id)
		require.Equal(t, want.State, info.State, id)
		require.Equal(t, want.Payload, info.Payload, id)
		require.Equal(t, want.Attempt, info.Attempt, id)
		require.Equal(t, want.LastError, info.LastError, id)
		require.Empty(t, info.Kind, id)
		require.Zero(t, info.MaxAttempts, id)
		require.Zero(t, info.Timeout, id)
	}
	c, err := s.Claim(ctx, store.ClaimParams{Limit: 10, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, c.Leases, 1)
	l := c.Leases[0]
	require.Equal(t, "pending", l.ID)
	require.Equal(t, store.Message{ID: "pending", Payload: []byte("p"), Due: l.Due}, l.Message, "an old row's lease")
	require.NoError(t, s.Ack(ctx, l.Ref()))

	m := store.Message{ID: "inflight", Kind: "new", Payload: []byte("f2"), MaxAttempts: 3, Timeout: time.Second + 1}
	require.NoError(t, s.Enqueue(ctx, []store.Message{m}))
	info, err := s.Get(ctx, "inflight")
	require.NoError(t, err)
	require.Equal(t, []any{"new", 3, time.Second + 1}, []any{info.Kind, info.MaxAttempts, info.Timeout},
		"an old row replaced with the fields")
}

// A migration cut after its ALTER TABLE, before it recorded the version,
// is done again: the columns there already are taken as added.
func TestMigrateAfterAPartialRun(t *testing.T) {
	db := newDatabase(t, "tw_partial")
	createVersion1(t, db, "old")
	for _, stmt := range migrations[1] {
		_, err := db.ExecContext(ctx, expand(stmt))
		require.NoError(t, err)
	}
	requireVersion(t, db, 1)
	s := openStore(t, db, "old")
	requireVersion(t, db, SchemaVersion)
	info, err := s.Get(ctx, "dead")
	require.NoError(t, err)
	require.Equal(t, "boom", info.LastError)

	// A column of the version's there alone is not taken as its ALTER
	// done.
	other := newDatabase(t, "tw_one_column")
	createVersion1(t, other, "old")
	_, err = other.ExecContext(ctx, expand(`ALTER TABLE {T} ADD COLUMN kind VARBINARY(128) NOT NULL DEFAULT ''`))
	require.NoError(t, err)
	_, err = New(ctx, other, "old")
	require.ErrorContains(t, err, "migrating to version 2")
	requireVersion(t, other, 1)
}

// MigrationSQL's statements, run by hand, make the tables of
// SchemaVersion, which a store WithoutMigrate takes; a second run of all
// of them fails only at the ALTER TABLEs, with error 1060.
func TestMigrationSQLByHand(t *testing.T) {
	db := newDatabase(t, "tw_by_hand")
	for _, stmt := range MigrationSQL() {
		_, err := db.ExecContext(ctx, stmt)
		require.NoError(t, err, stmt)
	}
	requireVersion(t, db, SchemaVersion)
	for _, stmt := range MigrationSQL() {
		_, err := db.ExecContext(ctx, stmt)
		if strings.HasPrefix(stmt, "ALTER TABLE") {
			require.ErrorContains(t, err, "1060", stmt)
			continue
		}
		require.NoError(t, err, stmt)
	}
	s := openStore(t, db, "q", WithoutMigrate())
	m := store.Message{ID: "a", Kind: "k", MaxAttempts: 2, Timeout: time.Nanosecond}
	require.NoError(t, s.Enqueue(ctx, []store.Message{m}))
	info, err := s.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, []any{"k", 2, time.Nanosecond}, []any{info.Kind, info.MaxAttempts, info.Timeout})
}

// Version 2's ALTER TABLE adds its columns without copying the table
// (ALGORITHM=INSTANT), so that a large queue's migration is quick.
func TestMigrationIsInstant(t *testing.T) {
	db := newDatabase(t, "tw_instant")
	createVersion1(t, db, "old")
	_, err := db.ExecContext(ctx, expand(migrations[1][0])+", ALGORITHM=INSTANT")
	require.NoError(t, err, "the server adds the columns in place")
}
