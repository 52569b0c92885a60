package pgstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/internal/pgtest"
)

// The package's tests share one server, started by TestMain, and one pool
// on it; each test makes stores of fresh queues.
var (
	server     *pgtest.Server
	sharedPool *pgxpool.Pool
	// skipReason, if not empty, skips every test: there is no PostgreSQL.
	skipReason string
)

var ctx = context.Background()

func TestMain(m *testing.M) {
	if runChild() { // a child process of a multi-process test: it exits
		return
	}
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	srv, err := pgtest.Start()
	if errors.Is(err, pgtest.ErrNoPostgres) && os.Getenv("REQUIRE_POSTGRES") != "1" {
		skipReason = "skipped: " + err.Error() + " (set REQUIRE_POSTGRES=1 to fail instead)"
		fmt.Fprintln(os.Stderr, "pgstore:", skipReason)
		return m.Run()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgstore: starting PostgreSQL:", err)
		return 1
	}
	server = srv
	defer srv.Remove()
	pool, err := newPool(srv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgstore:", err)
		_ = srv.Stop("fast")
		return 1
	}
	sharedPool = pool
	code := m.Run()
	pool.Close()
	if err := srv.Stop("fast"); err != nil {
		fmt.Fprintln(os.Stderr, "pgstore:", err)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "pgstore: goroutines leaked:", err)
			code = 1
		}
	}
	return code
}

// newPool returns a pool on srv, which the caller closes.
func newPool(srv *pgtest.Server) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(srv.ConnString() + " pool_max_conns=20")
	if err != nil {
		return nil, err
	}
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(c, cfg)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(c); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// testPool returns the shared pool, or skips the test without PostgreSQL.
func testPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
	return sharedPool
}

// queues numbers the queues of the tests, so that each is fresh.
var queues atomic.Int64

// freshQueue returns the name of a queue no test used.
func freshQueue() string { return fmt.Sprintf("q%d", queues.Add(1)) }

// newStore returns a store of a fresh queue on the shared pool, closed by
// the test's cleanup.
func newStore(t testing.TB, opts ...Option) *Store {
	t.Helper()
	return openStore(t, testPool(t), freshQueue(), opts...)
}

// openStore returns a store of queue on pool, closed by the test's
// cleanup.
func openStore(t testing.TB, pool *pgxpool.Pool, queue string, opts ...Option) *Store {
	t.Helper()
	s, err := New(ctx, pool, queue, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// newQueue returns a queue on s, closed by the test's cleanup.
func newQueue(t testing.TB, s *Store, opts ...durable.Option) *durable.Queue {
	t.Helper()
	q, err := durable.New(s, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = q.Close() })
	return q
}

func msg(id string, due time.Time) durable.Message {
	return durable.Message{ID: id, Payload: []byte("payload of " + id), Due: due}
}

// dbNow returns the database's clock.
func dbNow(t testing.TB) time.Time {
	t.Helper()
	var now time.Time
	require.NoError(t, testPool(t).QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&now))
	return now
}

// listeningPair returns two stores of a fresh queue without safety poll,
// the second listening, with its Wakeups channel (stopped with the test).
func listeningPair(t *testing.T) (*pgxpool.Pool, *Store, *Store, <-chan struct{}) {
	t.Helper()
	pool := testPool(t)
	queue := freshQueue()
	s := openStore(t, pool, queue, WithSafetyPoll(0))
	other := openStore(t, pool, queue, WithSafetyPoll(0))
	w, stop := other.Wakeups()
	t.Cleanup(stop)
	waitListening(t, other, w)
	return pool, s, other, w
}

// waitListening waits until s listens and w got the wake-up its listener
// sends once it listens (a moment after it counts as listening: w is
// subscribed before), and then empties w.
func waitListening(t testing.TB, s *Store, w <-chan struct{}) {
	t.Helper()
	require.Eventually(t, func() bool { return s.wake.listening.Load() == 1 }, 10*time.Second, time.Millisecond,
		"the store listens")
	requireWakeup(t, w, "the wake-up of a listener that starts listening")
	drain(w)
}

// drain empties w.
func drain(w <-chan struct{}) {
	for {
		select {
		case <-w:
		default:
			return
		}
	}
}

// requireWakeup waits up to 5 seconds for a wake-up on w.
func requireWakeup(t testing.TB, w <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-w:
	case <-time.After(5 * time.Second):
		t.Fatalf("no wake-up: %s", what)
	}
}

// requireNoWakeup checks that w receives nothing for d.
func requireNoWakeup(t testing.TB, w <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-w:
		t.Fatalf("a wake-up: %s", what)
	case <-time.After(d):
	}
}
