package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seed64e23a5c/timingwheel/internal/pgtest"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// postgresEnv names the environment variable that gives the tests a
// PostgreSQL to run on: a pgx DSN whose user may create databases, such
// as postgres:///postgres?host=/tmp&user=postgres. Without it, a test
// starts a server of its own (see internal/pgtest).
const postgresEnv = "TWBENCH_POSTGRES"

// testPostgres returns the DSN of postgresEnv, or of a server started for
// t (which skips t without PostgreSQL, unless REQUIRE_POSTGRES=1).
func testPostgres(t *testing.T) string {
	t.Helper()
	if dsn := os.Getenv(postgresEnv); dsn != "" {
		return dsn
	}
	return pgtest.ForTest(t).URL()
}

// TestRiverNeedsPostgres checks that the river scenario, named without a
// postgres:// -store, is refused on one line before anything runs, and
// that all leaves it out then but runs it with a PostgreSQL (and asynq
// only with a Redis).
func TestRiverNeedsPostgres(t *testing.T) {
	for _, args := range [][]string{{"river"}, {"river", "-store", "redis://localhost:6379"}} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 2, run(args, &stdout, &stderr), "%q", args)
		assert.Empty(t, stdout.String())
		assert.Equal(t, "twbench: "+needsPostgresError("river")+"\n"+usageHint+"\n", stderr.String())
	}

	o, err := parseArgs([]string{"all"})
	require.NoError(t, err)
	assert.False(t, o.has("river"))
	o, err = parseArgs([]string{"all", "-store", "redis://localhost:6379"})
	require.NoError(t, err)
	assert.False(t, o.has("river"))
	o, err = parseArgs([]string{"all", "-store", "postgres:///postgres?host=/tmp"})
	require.NoError(t, err)
	assert.True(t, o.has("river"))
	assert.True(t, o.has("durable"))
	assert.False(t, o.has("asynq"), "asynq needs a Redis")
	assert.Equal(t, namesWhere(func(s scenario) bool { return !s.needsRedis }), namesOf(o.scenarios))

	s, ok := lookup("river")
	require.True(t, ok)
	assert.True(t, s.needsPostgres)
	assert.Zero(t, s.timers(o), "the messages are in PostgreSQL")
}

// TestRiverHelp checks that -help describes the river scenario and the
// postgres:// form of -store.
func TestRiverHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"-h"}, &stdout, &stderr))
	help := stdout.String()
	for _, want := range []string{"  river ", "riverqueue/river", "InsertMany", "EnqueueTx", "FetchCooldown", "statements", "postgres://"} {
		assert.Contains(t, help, want)
	}
}

// TestRiverCounts checks the sizes derived from -pending, as the help
// describes them.
func TestRiverCounts(t *testing.T) {
	for pending, want := range map[int]int{2000: 100, 100_000: 2000, 1_000_000: 20_000, 100_000_000: 20_000} {
		o := defaultOptions()
		o.pending = pending
		assert.Equal(t, want, riverCount(o), "pending %d", pending)
		assert.Equal(t, min(want, 2000), riverLateCount(o), "pending %d", pending)
	}
	assert.Equal(t, 800, riverSlowCount, "10s of River's 80 jobs a second with its defaults")
}

// TestPgPoolConfig checks the pools twbench opens: 16 connections unless
// the DSN says otherwise, the scratch database, and the meter.
func TestPgPoolConfig(t *testing.T) {
	o := defaultOptions()
	o.store = "postgres://app@db.example.com/app"
	cfg, err := pgPoolConfig(o)
	require.NoError(t, err)
	assert.EqualValues(t, pgPoolConns, cfg.MaxConns)
	assert.Equal(t, "app", cfg.ConnConfig.Database)
	assert.Nil(t, cfg.ConnConfig.Tracer)

	o.store += "?pool_max_conns=3"
	o.pgDatabase = "twbench_x"
	o.pgMeter = &pgMeter{}
	cfg, err = pgPoolConfig(o)
	require.NoError(t, err)
	assert.EqualValues(t, 3, cfg.MaxConns, "the DSN's pool_max_conns wins")
	assert.Equal(t, "twbench_x", cfg.ConnConfig.Database)
	assert.Same(t, o.pgMeter, cfg.ConnConfig.Tracer)
}

// TestPgMeter checks that the meter counts statements, batch queries and
// COPYs between start and stop, less own.
func TestPgMeter(t *testing.T) {
	ctx := context.Background()
	m := &pgMeter{}
	m.TraceQueryStart(ctx, nil, pgx.TraceQueryStartData{})
	require.NoError(t, m.start(ctx))
	for range 3 {
		m.TraceQueryEnd(ctx, nil, pgx.TraceQueryEndData{})
		m.TraceQueryStart(ctx, nil, pgx.TraceQueryStartData{})
	}
	m.TraceBatchStart(ctx, nil, pgx.TraceBatchStartData{})
	m.TraceBatchQuery(ctx, nil, pgx.TraceBatchQueryData{})
	m.TraceBatchQuery(ctx, nil, pgx.TraceBatchQueryData{})
	m.TraceBatchEnd(ctx, nil, pgx.TraceBatchEndData{})
	m.TraceCopyFromStart(ctx, nil, pgx.TraceCopyFromStartData{})
	m.TraceCopyFromEnd(ctx, nil, pgx.TraceCopyFromEndData{})
	n, err := m.stop(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, int64(3+2+1-1), n)
}

// TestCheckStoreForPostgres checks that a PostgreSQL that does not answer
// stops durable and river before anything runs, and that other scenarios
// do not dial it.
func TestCheckStoreForPostgres(t *testing.T) {
	dsn := "postgres://twbench@" + silentServer(t) + "/twbench?sslmode=disable"
	for _, name := range []string{"durable", "river"} {
		o, err := parseArgs([]string{name, "-store", dsn})
		require.NoError(t, err)
		err = checkStore(o)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "no PostgreSQL answers there within 1.5s", name)
	}
	o, err := parseArgs([]string{"fire", "-store", dsn})
	require.NoError(t, err)
	assert.NoError(t, checkStore(o), "no dial without durable or river")
}

// TestRiverScenarioOnPostgres runs the river scenario, tiny, against the
// PostgreSQL of postgresEnv, and checks that every figure is there with
// both values, sane, and that the scratch database is gone afterwards.
func TestRiverScenarioOnPostgres(t *testing.T) {
	dsn := testPostgres(t)
	jsonPath := filepath.Join(t.TempDir(), "out.json")
	stdout, stderr := tinyRun(t, "-json", jsonPath, "-rounds", "2", "-store", dsn, "river")
	// Each round's rates go to stderr, and the table has their medians.
	assert.Contains(t, stderr, "twbench: river round 1 of 2: enqueue one at a time ")
	assert.Contains(t, stderr, "twbench: river round 2 of 2: enqueue one at a time ")
	assert.Contains(t, stderr, "twbench: river lateness round 1 of 2: lateness p50/p99 ")
	assert.Contains(t, stderr, "twbench: river lateness round 2 of 2: lateness p50/p99 ")
	assert.NotContains(t, stderr, "round 3")
	data, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	var rep report
	require.NoError(t, json.Unmarshal(data, &rep))

	// -pending 2000: K is the floor, 100, and the window 100ms.
	const def, fast = " (vs River defaults)", " (vs River 1ms fetch)"
	const of = ", 8 producers, K=100"
	lateOf := ", 8 workers, K=100 over 100ms"
	want := map[string]string{
		"enqueue 1 at a time" + of + ", due in 1h (vs River)":                            unitEnqueuesSec,
		"enqueue, batches of 100, EnqueueTx" + of + ", due in 1h (vs River)":             unitEnqueuesSec,
		"enqueue, batches of 100, Queue.Enqueue" + of + ", due in 1h (vs River)":         unitEnqueuesSec,
		"SQL statements per enqueue, 1 at a time" + of + " (vs River)":                   unitStatementsMsg,
		"SQL statements per enqueue, batches of 100, EnqueueTx" + of + " (vs River)":     unitStatementsMsg,
		"SQL statements per enqueue, batches of 100, Queue.Enqueue" + of + " (vs River)": unitStatementsMsg,
		"jobs worked, 8 workers, K=100 (vs River defaults, K=100)":                       unitJobsSec,
		"SQL statements per job worked (vs River defaults, K=100)":                       unitStatementsMsg,
		"jobs worked, 8 workers, K=100" + fast:                                           unitJobsSec,
		"SQL statements per job worked" + fast:                                           unitStatementsMsg,
		"commits per job worked (the server's, all databases)" + fast:                    unitCommitsMsg,
		"WAL fsyncs per job worked (the server's)" + fast:                                unitFsyncsMsg,
	}
	const calls = "store calls per job worked: "
	claimRow, ackRow := calls+"Claim (ours, a round trip each: the claim and its plan setting)", calls+"Ack (ours, concurrent ones share a statement)"
	oursOnlyRows := []string{claimRow, calls + "Confirm (ours, concurrent ones share a statement)", ackRow,
		calls + "Extend, Release, Retry, Expired (ours)"}
	for _, f := range oursOnlyRows {
		want[f] = unitCallsMsg
	}
	for _, vs := range []string{def, fast} {
		want["lateness p50"+lateOf+vs] = unitMillis
		want["lateness p99"+lateOf+vs] = unitMillis
		want["lateness max"+lateOf+vs] = unitMillis
		want["started before due"+lateOf+vs] = unitCount
	}
	ours, theirs := map[string]float64{}, map[string]float64{}
	for _, r := range rep.Rows {
		assert.Equal(t, "river", r.Scenario)
		require.NotNil(t, r.Ours, r.Figure)
		unit, ok := want[r.Figure]
		if assert.True(t, ok, "unexpected figure %q", r.Figure) {
			assert.Equal(t, unit, r.Unit, r.Figure)
		}
		ours[r.Figure] = *r.Ours
		if slices.Contains(oursOnlyRows, r.Figure) {
			assert.Nil(t, r.Runtime, "%s: ours only", r.Figure)
			continue
		}
		require.NotNil(t, r.Runtime, "%s: River's value", r.Figure)
		theirs[r.Figure] = *r.Runtime
	}
	require.Len(t, ours, len(want), "figures: %v", ours)

	// A job worked is acked once, and claimed by a claim that usually
	// takes several (a claim that finds nothing counts too).
	assert.InDelta(t, 1.0, ours[ackRow], 1e-9)
	assert.Positive(t, ours[claimRow])
	assert.Less(t, ours[claimRow], 2.0)
	for figure, unit := range want {
		if slices.Contains(oursOnlyRows, figure) {
			continue
		}
		switch unit {
		case unitEnqueuesSec, unitJobsSec:
			assert.Positive(t, ours[figure], figure)
			assert.Positive(t, theirs[figure], figure)
		case unitStatementsMsg, unitCommitsMsg:
			// Something per message, and fewer than 20 statements.
			for _, v := range []float64{ours[figure], theirs[figure]} {
				assert.Positive(t, v, figure)
				assert.Less(t, v, 20.0, figure)
			}
		case unitFsyncsMsg:
			// None on a server without fsync (the tests' own), and at
			// most a commit's worth otherwise.
			c := "commits per job worked (the server's, all databases)" + fast
			assert.LessOrEqual(t, ours[figure], ours[c], figure)
			assert.LessOrEqual(t, theirs[figure], theirs[c], figure)
		}
	}
	// At most one INSERT a message for ours (the 8 producers' concurrent
	// calls share statements); River's Insert is a transaction.
	assert.LessOrEqual(t, ours["SQL statements per enqueue, 1 at a time"+of+" (vs River)"], 1.0)
	assert.GreaterOrEqual(t, theirs["SQL statements per enqueue, 1 at a time"+of+" (vs River)"], 2.0)
	for _, vs := range []string{def, fast} {
		assert.Zero(t, ours["started before due"+lateOf+vs], "ours never starts early")
		assert.GreaterOrEqual(t, ours["lateness p50"+lateOf+vs], 0.0)
		assert.LessOrEqual(t, ours["lateness p50"+lateOf+vs], ours["lateness p99"+lateOf+vs])
		assert.LessOrEqual(t, ours["lateness p99"+lateOf+vs], ours["lateness max"+lateOf+vs])
		assert.LessOrEqual(t, theirs["lateness p50"+lateOf+vs], theirs["lateness p99"+lateOf+vs])
		assert.LessOrEqual(t, theirs["lateness p99"+lateOf+vs], theirs["lateness max"+lateOf+vs])
	}

	// The rates are the medians of the rounds' (two: their mean).
	oursMean, theirMean := meanOfTwoRounds(t, stderr, `jobs worked (\d+)/s vs (\d+)/s`)
	jobsFast := "jobs worked, 8 workers, K=100" + fast
	assert.InDelta(t, oursMean, ours[jobsFast], 1, "ours: the median of the rounds")
	assert.InDelta(t, theirMean, theirs[jobsFast], 1, "River's: the median of the rounds")

	// The table shows River's values in the runtime column.
	line := tableLine(t, stdout, "enqueue 1 at a time"+of+", due in 1h (vs River)")
	f := strings.Fields(line)
	assert.Equal(t, unitEnqueuesSec, f[len(f)-1], line)
	assert.Regexp(t, `x$`, f[len(f)-2], "a ratio: %s", line)

	assertNoScratchLeft(t, dsn)
}

// TestDurableOnPostgres runs the durable scenario, tiny, against the
// PostgreSQL of postgresEnv, and checks its figures and that the scratch
// database is gone afterwards.
func TestDurableOnPostgres(t *testing.T) {
	dsn := testPostgres(t)
	figures := durableOnStore(t, dsn)
	assert.Positive(t, figures["database size (pg_database_size), N=2k pending"])
	assertNoScratchLeft(t, dsn)
}

// assertNoScratchLeft checks that no scratch database of twbench is left
// on the server of dsn.
func assertNoScratchLeft(t *testing.T, dsn string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var left int
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname LIKE 'twbench\\_%'").Scan(&left))
	assert.Zero(t, left, "scratch databases left on the server")
}
