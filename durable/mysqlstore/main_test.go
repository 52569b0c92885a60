package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/internal/mysqltest"
)

// The package's tests share one server, started by TestMain, and one
// *sql.DB on its database "tw"; each test makes stores of fresh queues.
var (
	server   *mysqltest.Server
	sharedDB *sql.DB
	// skipReason, if not empty, skips every test: there is no MariaDB.
	skipReason string
)

// testDB is the database of the tests.
const testDB = "tw"

var ctx = context.Background()

func TestMain(m *testing.M) {
	if runChild() { // a child process of a multi-process test: it exits
		return
	}
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	srv, err := mysqltest.Start()
	if errors.Is(err, mysqltest.ErrNoMySQL) && !mysqltest.Required() {
		skipReason = "skipped: " + err.Error() + " (apt-get install mariadb-server, or set REQUIRE_MYSQL=1 to fail instead)"
		fmt.Fprintln(os.Stderr, "mysqlstore:", skipReason)
		// Examples cannot skip: leave them out.
		_ = flag.Set("test.skip", "^Example")
		return m.Run()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mysqlstore: starting MariaDB:", err)
		return 1
	}
	server = srv
	defer srv.Remove()
	db, err := openDB(srv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mysqlstore:", err)
		_ = srv.Kill()
		return 1
	}
	sharedDB = db
	os.Setenv("MYSQL_DSN", srv.DSN(testDB)) // for the examples
	code := m.Run()
	_ = db.Close()
	if err := srv.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "mysqlstore:", err)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "mysqlstore: goroutines leaked:", err)
			code = 1
		}
	}
	return code
}

// openDB creates the test database on srv and returns a *sql.DB on it,
// which the caller closes.
func openDB(srv *mysqltest.Server) (*sql.DB, error) {
	if err := srv.CreateDB(testDB); err != nil {
		return nil, err
	}
	db, err := sql.Open("mysql", srv.DSN(testDB))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(50)
	db.SetMaxIdleConns(50)
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := db.PingContext(c); err != nil {
		_ = db.Close()
		return nil, err
	}
	return db, nil
}

// testDBHandle returns the shared *sql.DB, or skips the test without
// MariaDB.
func testDBHandle(t testing.TB) *sql.DB {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
	return sharedDB
}

// queues numbers the queues of the tests, so that each is fresh.
var queues atomic.Int64

// freshQueue returns the name of a queue no test used.
func freshQueue() string { return fmt.Sprintf("q%d-%d", os.Getpid(), queues.Add(1)) }

// newStore returns a store of a fresh queue on the shared *sql.DB, closed
// by the test's cleanup.
func newStore(t testing.TB, opts ...Option) *Store {
	t.Helper()
	return openStore(t, testDBHandle(t), freshQueue(), opts...)
}

// openStore returns a store of queue on db, closed by the test's cleanup.
func openStore(t testing.TB, db *sql.DB, queue string, opts ...Option) *Store {
	t.Helper()
	s, err := New(ctx, db, queue, opts...)
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
	var us int64
	require.NoError(t, testDBHandle(t).QueryRowContext(ctx, expand(`SELECT US({NOW})`)).Scan(&us))
	return instant(us)
}
