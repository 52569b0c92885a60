package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/seed64e23a5c/timingwheel/durable/mysqlstore"
)

// myPoolConns is the most connections a *sql.DB of twbench opens on a
// MySQL, as pgPoolConns on a PostgreSQL: 8 producers or consumers, and the
// store's wake-up poll and acks in batches.
const myPoolConns = 16

// isMySQLURL reports whether store names a MySQL or MariaDB server.
func isMySQLURL(store string) bool { return strings.HasPrefix(store, "mysql://") }

// myConfig reads the mysql:// URL of -store, as twq reads its targets:
// mysql://[user:password@]host[:port]/[db], or mysql://user@/[db]?socket=/path
// for a unix socket; the other query parameters are go-sql-driver/mysql's
// (tls, charset, ...). The database, if given, is the one the scratch
// databases are created from (see newMyScratch); the queues are never
// there. With o.myDatabase set (the running scenario's scratch database),
// the config names it instead.
func myConfig(o *options) (*mysql.Config, error) {
	u, err := url.Parse(o.store)
	if err != nil {
		return nil, err
	}
	q := u.Query()
	cfg := mysql.NewConfig()
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	cfg.DBName = strings.TrimPrefix(u.Path, "/")
	switch sock := q.Get("socket"); {
	case sock != "":
		cfg.Net, cfg.Addr = "unix", sock
	case u.Hostname() == "":
		return nil, fmt.Errorf("%s names no host: mysql://host[:port]/, or mysql://user@/?socket=/path/mysqld.sock", u.Redacted())
	case u.Port() != "":
		cfg.Net, cfg.Addr = "tcp", u.Host
	default:
		cfg.Net, cfg.Addr = "tcp", u.Hostname()+":3306"
	}
	q.Del("socket")
	if len(q) > 0 {
		// The driver's own parameters, as its DSN takes them.
		parsed, err := mysql.ParseDSN("/?" + q.Encode())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", u.Redacted(), err)
		}
		cfg.Params, cfg.TLSConfig, cfg.Collation = parsed.Params, parsed.TLSConfig, parsed.Collation
	}
	// Each statement one round trip, as mysqlstore's docs advise (and so
	// one statement to the server's counters, see myMeter).
	cfg.ParseTime, cfg.InterpolateParams = true, true
	if o.myDatabase != "" {
		cfg.DBName = o.myDatabase
	}
	return cfg, nil
}

// myWarmConns is how many connections myDB opens at once with o.pgWarm:
// one for each of 8 producers or consumers, and one for the poll.
const myWarmConns = 9

// myDB opens a *sql.DB on the database of o (see myConfig) and checks
// that it answers. With o.pgWarm, it opens myWarmConns connections before
// it returns, so that a figure of throughput does not time their dials;
// without, it dials as an application would, for the figures that time
// opening a store.
func myDB(ctx context.Context, o *options) (*sql.DB, error) {
	cfg, err := myConfig(o)
	if err != nil {
		return nil, err
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(myPoolConns)
	db.SetMaxIdleConns(myPoolConns)
	if !o.pgWarm {
		return db, nil
	}
	conns := make([]*sql.Conn, 0, myWarmConns)
	var dialErr error
	for range myWarmConns {
		c, err := db.Conn(ctx)
		if err == nil {
			err = c.PingContext(ctx)
		}
		if err != nil {
			dialErr = err
			break
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		_ = c.Close() // back to the pool, idle
	}
	if dialErr != nil {
		_ = db.Close()
		return nil, fmt.Errorf("connecting to -store %s: %w", redactURL(o.store), dialErr)
	}
	return db, nil
}

// myStore is a mysqlstore.Store that closes its *sql.DB with it.
type myStore struct {
	*mysqlstore.Store
	db *sql.DB
}

func (s myStore) Close() error { return errors.Join(s.Store.Close(), s.db.Close()) }

// openMyStore opens a *sql.DB on the database of o and the store of queue
// on it, which creates its tables if needed.
func openMyStore(o *options, queue string) (myStore, error) {
	ctx := context.Background()
	db, err := myDB(ctx, o)
	if err != nil {
		return myStore{}, err
	}
	s, err := mysqlstore.New(ctx, db, queue)
	if err != nil {
		_ = db.Close()
		return myStore{}, err
	}
	return myStore{s, db}, nil
}

// myScratch is a database that the durable scenario creates on the server
// of -store for its run, so that its tables and queues go with it when
// drop drops it.
type myScratch struct {
	o    *options // -store's options, with myDatabase the scratch's
	name string
}

// newMyScratch creates a database named twbench_ and random hex on the
// server of -store (whose user needs CREATE and DROP) and returns it, with
// a copy of o whose connections use it.
func newMyScratch(o *options) (*myScratch, error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "twbench_" + hex.EncodeToString(b[:])
	if err := myAdmin(o, "CREATE DATABASE `"+name+"`"); err != nil {
		return nil, fmt.Errorf("creating a scratch database on -store %s: %w", redactURL(o.store), err)
	}
	so := *o
	so.myDatabase = name
	return &myScratch{o: &so, name: name}, nil
}

// drop drops the scratch database.
func (s *myScratch) drop() error {
	if err := myAdmin(s.o, "DROP DATABASE IF EXISTS `"+s.name+"`"); err != nil {
		return fmt.Errorf("dropping the scratch database %s: %w", s.name, err)
	}
	return nil
}

// myAdmin runs query on one connection to the database that -store names
// itself (not a scratch database), within a minute.
func myAdmin(o *options, query string) error {
	ao := *o
	ao.myDatabase, ao.pgWarm = "", false
	db, err := myDB(context.Background(), &ao)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = db.ExecContext(ctx, query)
	return err
}

// myDatabaseBytes returns the size of the database of o, its tables'
// data and indexes as InnoDB counts them (information_schema.TABLES),
// after an ANALYZE TABLE of each, so that the counts are not those of
// before the fill.
func myDatabaseBytes(o *options) (int64, error) {
	ctx := context.Background()
	db, err := myDB(ctx, o)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SELECT table_name FROM information_schema.TABLES WHERE table_schema = DATABASE()")
	if err != nil {
		return 0, err
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			_ = rows.Close()
			return 0, err
		}
		tables = append(tables, name)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return 0, err
	}
	for _, name := range tables {
		// ANALYZE TABLE returns a result set: read and close it.
		r, err := db.QueryContext(ctx, "ANALYZE TABLE `"+name+"`")
		if err != nil {
			return 0, err
		}
		for r.Next() {
		}
		if err := errors.Join(r.Err(), r.Close()); err != nil {
			return 0, err
		}
	}
	var n int64
	err = db.QueryRowContext(ctx, `SELECT COALESCE(SUM(data_length + index_length), 0)
FROM information_schema.TABLES WHERE table_schema = DATABASE()`).Scan(&n)
	return n, err
}

// checkMySQL makes sure that the MySQL of -store answers a SELECT 1
// within storeCheckTimeout, dial included.
func checkMySQL(o *options) error {
	cfg, err := myConfig(o)
	if err != nil {
		return fmt.Errorf("-store %s: %w", redactURL(o.store), err)
	}
	cfg.Timeout = storeCheckTimeout
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return fmt.Errorf("-store %s: %w", redactURL(o.store), err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), storeCheckTimeout)
	defer cancel()
	if _, err := db.ExecContext(ctx, "SELECT 1"); err != nil {
		return fmt.Errorf("-store %s: no MySQL answers a SELECT 1 there within %v: %w", redactURL(o.store), storeCheckTimeout, err)
	}
	return nil
}

// myMeter counts the statements a MySQL or MariaDB server executes
// between start and stop, from its global status variable Questions (the
// statements clients sent; with interpolateParams, which myConfig sets,
// each of ours is one). It counts every client of the server, and the
// background work of ours (the wake-up poll): the figure is meaningful
// on a server nothing else uses meanwhile. The meter's own statement at
// stop is left out.
type myMeter struct {
	db     *sql.DB
	before int64
}

// newMyMeter returns a meter on the server of o; close it with close.
func newMyMeter(o *options) (*myMeter, error) {
	ao := *o
	ao.pgWarm = false
	db, err := myDB(context.Background(), &ao)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return &myMeter{db: db}, nil
}

func (m *myMeter) close() error { return m.db.Close() }

// questions reads the server's Questions, which counts the statement
// that reads it.
func (m *myMeter) questions(ctx context.Context) (int64, error) {
	var name string
	var n int64
	err := m.db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Questions'").Scan(&name, &n)
	return n, err
}

// start notes the statements executed so far.
func (m *myMeter) start(ctx context.Context) error {
	n, err := m.questions(ctx)
	m.before = n
	return err
}

// stop returns the statements executed since start, less own (statements
// that the caller sent itself to watch the work, not part of it) and the
// meter's own.
func (m *myMeter) stop(ctx context.Context, own int64) (int64, error) {
	n, err := m.questions(ctx)
	if err != nil {
		return 0, err
	}
	return n - m.before - 1 - own, nil
}
