package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/pgstore"
	"github.com/seed64e23a5c/timingwheel/internal/pgtest"
)

// The PostgreSQL server of the tests, started by the first test that
// needs one (pgServer) and stopped after the last (removingBinary).
var (
	pgOnce   sync.Once
	pgShared *pgtest.Server
	pgErr    error
	pgQueues atomic.Int64 // numbers the tests' queues
)

// pgServer returns the tests' PostgreSQL server, starting it the first
// time. It skips the test without PostgreSQL binaries, unless
// REQUIRE_POSTGRES=1.
func pgServer(t *testing.T) *pgtest.Server {
	t.Helper()
	pgOnce.Do(func() { pgShared, pgErr = pgtest.Start() })
	pgtest.SkipIfAbsent(t, pgErr)
	require.NoError(t, pgErr, "starting PostgreSQL")
	return pgShared
}

// stopPostgres stops the tests' server, if they started one.
func stopPostgres() {
	if pgShared != nil {
		_ = pgShared.Stop("immediate")
		pgShared.Remove()
	}
}

// pgPool returns a pool on srv, closed at the end of the test.
func pgPool(t *testing.T, srv *pgtest.Server) *pgxpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, srv.ConnString())
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// newPostgresBackend seeds a queue of its own on the tests' PostgreSQL.
func newPostgresBackend(t *testing.T) *backend {
	srv := pgServer(t)
	pool := pgPool(t, srv)
	queue := fmt.Sprintf("orders-%d", pgQueues.Add(1))
	open := func(t *testing.T) (durable.Store, func()) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s, err := pgstore.New(ctx, pool, queue)
		require.NoError(t, err)
		return s, func() { require.NoError(t, s.Close()) }
	}
	s, closeStore := open(t)
	soon := seed(t, s)
	closeStore()
	return &backend{
		queue:   srv.URL() + "&queue=" + url.QueryEscape(queue),
		soon:    soon.UTC(),
		store:   open,
		state:   func(t *testing.T) any { return pgContents(t, pool) },
		stateIs: "the tables hold the same rows, and the sequences are where they were",
	}
}

// pgContents sums up what pgstore keeps in the schema public: each
// table's rows, and the sequences' values.
func pgContents(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var parts []string
	for _, table := range []string{"timingwheel_messages", "timingwheel_series", "timingwheel_queues", "timingwheel_schema_version"} {
		var n int
		var sum string
		err := pool.QueryRow(ctx, `SELECT count(*), md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) FROM `+table+` t`).Scan(&n, &sum)
		require.NoError(t, err, table)
		parts = append(parts, fmt.Sprintf("%s: %d rows, %s", table, n, sum))
	}
	for _, seq := range []string{"timingwheel_seq", "timingwheel_token"} {
		var v int64
		require.NoError(t, pool.QueryRow(ctx, `SELECT last_value FROM `+seq).Scan(&v), seq)
		parts = append(parts, fmt.Sprintf("%s: %d", seq, v))
	}
	return strings.Join(parts, "; ")
}

// TestPostgresWriteCheckSeesWrites checks that the sum of
// TestReadOnlyCommandsWriteNothing sees a write twq makes.
func TestPostgresWriteCheckSeesWrites(t *testing.T) {
	b := newPostgresBackend(t)
	pool := pgPool(t, pgServer(t))
	before := pgContents(t, pool)
	twq(t, b.queue, "cancel", "p1").ok(t)
	require.NotEqual(t, before, pgContents(t, pool))
}

func TestPostgresErrors(t *testing.T) {
	srv := pgServer(t)
	b := newPostgresBackend(t)
	for _, cmd := range [][]string{{"stats"}, {"requeue", "x"}} {
		twq(t, append([]string{srv.URL() + "&queue=orders&schema=nothing_here"}, cmd...)...).failed(t, exitError,
			`has no pgstore tables at this version in schema "nothing_here"`, "creates and migrates none")
	}
	twq(t, strings.Replace(b.queue, "&queue=", "&nothing=", 1), "stats").failed(t, exitUsage, "names no queue: add ?queue=NAME")
	twq(t, "postgres://user:secret@host:notaport/db?queue=q", "stats").failed(t, exitUsage, "bad PostgreSQL URL")

	dead := freeAddr(t) // nothing listens there
	r := twq(t, "-timeout", "500ms", "postgres://u:secret@"+dead+"/db?queue=orders&sslmode=disable", "stats")
	r.failed(t, exitError, "cannot reach PostgreSQL at postgres://u:xxxxx@"+dead)
	assert.NotContains(t, r.stderr, "secret")

	// A queue name with no rows is an empty queue.
	var st statsJSON
	twq(t, "-json", srv.URL()+"&queue=empty", "stats").ok(t).decode(t, &st)
	assert.Equal(t, statsJSON{}, st)
}
