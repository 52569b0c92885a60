package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/mysqlstore"
	"github.com/seed64e23a5c/timingwheel/internal/mysqltest"
)

// The MariaDB server of the tests, started by the first test that needs
// one (myServer) and stopped after the last (removingBinary).
var (
	myOnce   sync.Once
	myShared *mysqltest.Server
	myErr    error
	myQueues atomic.Int64 // numbers the tests' queues
)

// myDatabase is the database of the tests on it.
const myDatabase = "twq"

// myServer returns the tests' MariaDB server, starting it the first time.
// It skips the test without MariaDB binaries, unless REQUIRE_MYSQL=1.
func myServer(t *testing.T) *mysqltest.Server {
	t.Helper()
	myOnce.Do(func() {
		if myShared, myErr = mysqltest.Start(); myErr == nil {
			myErr = myShared.CreateDB(myDatabase)
		}
	})
	if errors.Is(myErr, mysqltest.ErrNoMySQL) && !mysqltest.Required() {
		t.Skipf("%v: skipping (apt-get install mariadb-server, or set REQUIRE_MYSQL=1 to fail instead)", myErr)
	}
	require.NoError(t, myErr, "starting MariaDB")
	return myShared
}

// stopMySQL stops the tests' server, if they started one.
func stopMySQL() {
	if myShared != nil {
		_ = myShared.Kill()
		myShared.Remove()
	}
}

// myDB returns a *sql.DB on the tests' database, closed at the end of the
// test.
func myDB(t *testing.T, srv *mysqltest.Server) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", srv.DSN(myDatabase))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// newMySQLBackend seeds a queue of its own on the tests' MariaDB.
func newMySQLBackend(t *testing.T) *backend {
	srv := myServer(t)
	db := myDB(t, srv)
	queue := fmt.Sprintf("orders-%d", myQueues.Add(1))
	open := func(t *testing.T) (durable.Store, func()) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s, err := mysqlstore.New(ctx, db, queue)
		require.NoError(t, err)
		return s, func() { require.NoError(t, s.Close()) }
	}
	s, closeStore := open(t)
	soon := seed(t, s)
	closeStore()
	return &backend{
		queue:   srv.URL(myDatabase) + "&queue=" + queue,
		soon:    soon.UTC(),
		store:   open,
		state:   func(t *testing.T) any { return myContents(t, db) },
		stateIs: "the tables hold the same rows",
	}
}

// myContents sums up what mysqlstore keeps: each table's checksum.
func myContents(t *testing.T, db *sql.DB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var parts []string
	for _, table := range []string{"timingwheel_messages", "timingwheel_series", "timingwheel_queues", "timingwheel_schema_version"} {
		var name string
		var sum sql.NullInt64
		require.NoError(t, db.QueryRowContext(ctx, "CHECKSUM TABLE "+table+" EXTENDED").Scan(&name, &sum), table)
		parts = append(parts, fmt.Sprintf("%s: %d", table, sum.Int64))
	}
	return strings.Join(parts, "; ")
}

// TestMySQLWriteCheckSeesWrites checks that the sum of
// TestReadOnlyCommandsWriteNothing sees a write twq makes.
func TestMySQLWriteCheckSeesWrites(t *testing.T) {
	b := newMySQLBackend(t)
	db := myDB(t, myServer(t))
	before := myContents(t, db)
	twq(t, b.queue, "cancel", "p1").ok(t)
	require.NotEqual(t, before, myContents(t, db))
}

func TestMySQLErrors(t *testing.T) {
	srv := myServer(t)
	b := newMySQLBackend(t)
	require.NoError(t, srv.CreateDB("empty"))
	twq(t, srv.URL("empty")+"&queue=orders", "stats").failed(t, exitError,
		"has no mysqlstore tables at this version", "creates and migrates none")
	twq(t, strings.Replace(b.queue, "&queue=", "&nothing=", 1), "stats").failed(t, exitUsage, "names no queue: add ?queue=NAME")
	twq(t, "mysql://u@host/?queue=q", "stats").failed(t, exitUsage, "names no database")

	// A queue name with no rows is an empty queue.
	var st statsJSON
	twq(t, "-json", srv.URL(myDatabase)+"&queue=empty", "stats").ok(t).decode(t, &st)
	require.Equal(t, statsJSON{}, st)
}
