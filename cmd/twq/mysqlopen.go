package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/seed64e23a5c/timingwheel/durable/mysqlstore"
)

// parseMySQLTarget reads a mysql:// URL: mysql://[user:password@]host[:port]/db?queue=NAME,
// or mysql://user@/db?socket=/path/mysqld.sock&queue=NAME for a unix
// socket. The other parameters are go-sql-driver/mysql's DSN parameters
// (tls, charset, ...).
func parseMySQLTarget(s string) (target, error) {
	u, err := url.Parse(s)
	if err != nil {
		return target{}, usagef("bad MySQL URL %s: %v", redact(s), err)
	}
	q := u.Query()
	name := q.Get("queue")
	if name == "" {
		return target{}, usagef("the URL %s names no queue: add ?queue=NAME", u.Redacted())
	}
	cfg := mysql.NewConfig()
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	cfg.DBName = strings.TrimPrefix(u.Path, "/")
	if cfg.DBName == "" {
		return target{}, usagef("the URL %s names no database: mysql://host/DB?queue=NAME", u.Redacted())
	}
	switch sock := q.Get("socket"); {
	case sock != "":
		cfg.Net, cfg.Addr = "unix", sock
	case u.Port() != "":
		cfg.Net, cfg.Addr = "tcp", u.Host
	default:
		cfg.Net, cfg.Addr = "tcp", u.Hostname()+":3306"
	}
	shown := u.Redacted()
	q.Del("queue")
	q.Del("socket")
	if len(q) > 0 {
		// The driver's own parameters, as its DSN takes them.
		parsed, err := mysql.ParseDSN("/?" + q.Encode())
		if err != nil {
			return target{}, usagef("bad MySQL URL %s: %v", u.Redacted(), err)
		}
		cfg.Params, cfg.TLSConfig, cfg.Collation = parsed.Params, parsed.TLSConfig, parsed.Collation
	}
	cfg.ParseTime, cfg.InterpolateParams = true, true
	return target{my: cfg, queue: name, shown: shown}, nil
}

// openMySQL opens the queue t names on MySQL or MariaDB, waiting up to
// o.timeout to connect. It never creates nor migrates mysqlstore's tables
// (mysqlstore.WithoutMigrate): they must be there, at this version. A
// queue with no rows is an empty queue, not an error. The read-only
// commands make only reads; the connections themselves are not made
// read-only (MySQL and MariaDB name that setting differently).
func openMySQL(ctx context.Context, t target, o options) (*handle, error) {
	cfg := t.my.Clone()
	cfg.Timeout = o.timeout
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", t, err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(4)
	pctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		_ = db.Close()
		return nil, myReachError(t, o, err)
	}
	s, err := mysqlstore.New(pctx, db, t.queue, mysqlstore.WithoutMigrate())
	switch {
	case errors.Is(err, mysqlstore.ErrSchemaTooOld):
		_ = db.Close()
		return nil, fmt.Errorf("%s has no mysqlstore tables at this version (twq creates and migrates none: run the service, or mysqlstore.MigrationSQL): %w", t, err)
	case err != nil:
		_ = db.Close()
		return nil, fmt.Errorf("opening %s: %w", t, err)
	}
	return &handle{store: s, close: func() {
		_ = s.Close()
		_ = db.Close()
	}}, nil
}

// myReachError explains a failure to connect to MySQL.
func myReachError(t target, o options, err error) error {
	var myErr *mysql.MySQLError
	switch {
	case errors.As(err, &myErr):
		return fmt.Errorf("%s refused the connection: %s (error %d)", t, myErr.Message, myErr.Number)
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return fmt.Errorf("no answer from MySQL at %s within %v", t, o.timeout)
	}
	return fmt.Errorf("cannot reach MySQL at %s: %w", t, err)
}
