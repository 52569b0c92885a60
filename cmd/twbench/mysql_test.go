package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/internal/mysqltest"
)

// testMySQL starts a MariaDB server for t (see internal/mysqltest),
// stopped and removed when t ends, and returns it; it skips t without
// the binaries, unless REQUIRE_MYSQL=1.
func testMySQL(t *testing.T) *mysqltest.Server {
	t.Helper()
	srv, err := mysqltest.Start()
	if errors.Is(err, mysqltest.ErrNoMySQL) && !mysqltest.Required() {
		t.Skipf("%v: skipping (apt-get install mariadb-server, or set REQUIRE_MYSQL=1 to fail instead)", err)
	}
	require.NoError(t, err, "starting MariaDB")
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Logf("stopping MariaDB: %v", err)
			_ = srv.Kill()
		}
		srv.Remove()
	})
	return srv
}

// TestMyConfig checks how -store's mysql:// URL becomes the driver's
// configuration.
func TestMyConfig(t *testing.T) {
	o := defaultOptions()
	o.store = "mysql://app:pw@db.example.com:3307/app?tls=skip-verify"
	cfg, err := myConfig(o)
	require.NoError(t, err)
	assert.Equal(t, []string{"app", "pw", "tcp", "db.example.com:3307", "app"}, []string{cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName})
	assert.True(t, cfg.InterpolateParams, "one round trip, and one Question, a statement")
	assert.True(t, cfg.ParseTime)
	assert.Equal(t, "skip-verify", cfg.TLSConfig)

	o.store = "mysql://root@/?socket=%2Ftmp%2Fmy.sock"
	o.myDatabase = "twbench_x"
	cfg, err = myConfig(o)
	require.NoError(t, err)
	assert.Equal(t, []string{"root", "unix", "/tmp/my.sock", "twbench_x"}, []string{cfg.User, cfg.Net, cfg.Addr, cfg.DBName})

	o.store, o.myDatabase = "mysql://db.example.com", ""
	cfg, err = myConfig(o)
	require.NoError(t, err)
	assert.Equal(t, "db.example.com:3306", cfg.Addr, "the default port")
	assert.Empty(t, cfg.DBName)

	o.store = "mysql:///app"
	_, err = myConfig(o)
	assert.ErrorContains(t, err, "names no host")
}

// TestCheckStoreForMySQL checks that a MySQL that does not answer stops
// durable before anything runs, and that other scenarios do not dial it.
func TestCheckStoreForMySQL(t *testing.T) {
	store := "mysql://twbench@" + silentServer(t) + "/"
	o, err := parseArgs([]string{"durable", "-store", store})
	require.NoError(t, err)
	err = checkStore(o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no MySQL answers a SELECT 1 there within 1.5s")
	o, err = parseArgs([]string{"fire", "-store", store})
	require.NoError(t, err)
	assert.NoError(t, checkStore(o), "no dial without durable")
}

// TestDurableOnMySQL runs the durable scenario, tiny, against a MariaDB
// of its own, and checks its figures, the SQL statements per message
// among them, and that the scratch database is gone afterwards. It checks
// first that the meter counts exactly the statements sent between its
// start and stop.
func TestDurableOnMySQL(t *testing.T) {
	srv := testMySQL(t)
	store := srv.URL("")

	t.Run("meter", func(t *testing.T) {
		ctx := context.Background()
		o := defaultOptions()
		o.store = store
		m, err := newMyMeter(o)
		require.NoError(t, err)
		defer func() { assert.NoError(t, m.close()) }()
		db, err := myDB(ctx, o)
		require.NoError(t, err)
		defer db.Close()
		for _, n := range []int{0, 5} {
			require.NoError(t, m.start(ctx))
			for range n {
				var one int
				require.NoError(t, db.QueryRowContext(ctx, "SELECT ?", 1).Scan(&one))
			}
			got, err := m.stop(ctx, 0)
			require.NoError(t, err)
			assert.EqualValues(t, n, got, "statements between start and stop")
		}
	})

	figures := durableOnStoreRows(t, store, 20)
	assert.Positive(t, figures["database size (InnoDB data+index), N=2k pending"])
	// One INSERT a message, and the store's wake-up poll meanwhile.
	one := figures["SQL statements per message, enqueue, 1 producer, K=100"]
	assert.GreaterOrEqual(t, one, 1.0)
	assert.Less(t, one, 5.0)
	// One INSERT, or a transaction of a few, for 100 messages.
	batch := figures["SQL statements per message, enqueue in batches of 100, 8 producers, K=100"]
	assert.Positive(t, batch)
	assert.Less(t, batch, 1.0)
	// A claim's share, a confirm and an ack each, in batches or not.
	recv := figures["SQL statements per message, receive+ack, 8 consumers, K=100"]
	assert.Positive(t, recv)
	assert.Less(t, recv, 20.0)

	out, err := srv.Client("SHOW DATABASES LIKE 'twbench\\_%'")
	require.NoError(t, err)
	assert.Empty(t, strings.TrimSpace(out), "scratch databases left on the server")
}
