package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/internal/pgtest"
)

// TestOwnPostgresRunsAsUsersDo: -store postgres names a server of
// twbench's own, started with fsync and synchronous_commit on unless
// -pg-unsafe, and the note under the table says which mode the figures
// are of.
func TestOwnPostgresRunsAsUsersDo(t *testing.T) {
	o, err := parseArgs([]string{"-store", "postgres", "river"})
	require.NoError(t, err, "river runs on -store postgres")
	for _, unsafe := range []bool{false, true} {
		o.store, o.pgUnsafe = storeOwnPostgres, unsafe
		stop, err := startPostgres(o)
		pgtest.SkipIfAbsent(t, err)
		require.NoError(t, err)
		require.NoError(t, checkPostgres(o))
		var note bytes.Buffer
		require.NoError(t, writePostgresNote(&note, o))
		stop()
		if unsafe {
			assert.Equal(t, "PostgreSQL: fsync=off, synchronous_commit=on, NOT as users run it: commits do not wait for the disk (the fast unsafe mode; a crash of the machine loses them).\n", note.String())
		} else {
			assert.Equal(t, "PostgreSQL: fsync=on, synchronous_commit=on, as users run it: each commit waits for its WAL to reach the disk.\n", note.String())
		}
	}
}

// TestPgMeterCountsTheServersCommitsAndFsyncs: a meter with a dsn counts
// the commits and the WAL syncs the server made between start and stop.
func TestPgMeterCountsTheServersCommitsAndFsyncs(t *testing.T) {
	dsn := testPostgres(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CREATE TABLE twbench_meter_test (v int)")
	require.NoError(t, err)
	defer func() {
		_, err := conn.Exec(ctx, "DROP TABLE twbench_meter_test")
		assert.NoError(t, err)
	}()
	m := &pgMeter{dsn: dsn}
	require.NoError(t, m.start(ctx))
	for i := range 5 {
		_, err := conn.Exec(ctx, "INSERT INTO twbench_meter_test VALUES ($1)", i)
		require.NoError(t, err)
	}
	_, err = m.stop(ctx, 0)
	require.NoError(t, err)
	c := m.last()
	assert.GreaterOrEqual(t, c.commits, int64(5), "five commits at least")
	var fsync string
	require.NoError(t, conn.QueryRow(ctx, "SELECT current_setting('fsync')").Scan(&fsync))
	if fsync == "on" {
		assert.GreaterOrEqual(t, c.syncs, int64(1), "a commit with fsync on syncs the WAL")
	}
}
