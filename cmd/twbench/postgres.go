package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seed64e23a5c/timingwheel/durable/pgstore"
	"github.com/seed64e23a5c/timingwheel/internal/pgtest"
)

// pgPoolConns is the size of every pool twbench opens on a PostgreSQL,
// ours and River's alike, unless the DSN sets pool_max_conns: 8 producers
// or workers, a listening connection and River's own services. pgxpool's
// default (max(4, cores)) would make 8 producers wait for connections.
const pgPoolConns = 16

// isPostgresURL reports whether store names a PostgreSQL server: a pgx
// DSN in URL form, or storeOwnPostgres (which run replaces with the URL of
// the server it starts).
func isPostgresURL(store string) bool {
	return store == storeOwnPostgres || strings.HasPrefix(store, "postgres://") || strings.HasPrefix(store, "postgresql://")
}

// storeOwnPostgres is the -store of a PostgreSQL that twbench starts
// itself, in a temporary directory, for the run (see startPostgres).
const storeOwnPostgres = "postgres"

// startPostgres starts the PostgreSQL of -store postgres (internal/pgtest:
// the newest under /usr/lib/postgresql, a unix socket, as the user
// postgres when root), as users run it, fsync and synchronous_commit on,
// unless -pg-unsafe, and points o.store at it. stop stops and removes it.
func startPostgres(o *options) (stop func(), err error) {
	srv, err := pgtest.StartWith(pgtest.Options{Durable: !o.pgUnsafe})
	if err != nil {
		return nil, fmt.Errorf("-store %s: starting PostgreSQL: %w", storeOwnPostgres, err)
	}
	o.store = srv.URL()
	return func() {
		_ = srv.Stop("fast")
		srv.Remove()
	}, nil
}

// pgPoolConfig returns the pool configuration of -store: connections to
// o.pgDatabase if set (the scratch database of the running scenario, see
// newPgScratch), pgPoolConns of them unless the DSN says otherwise, and
// every statement counted by o.pgMeter if set.
func pgPoolConfig(o *options) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(o.store)
	if err != nil {
		return nil, err
	}
	if !strings.Contains(o.store, "pool_max_conns") {
		cfg.MaxConns = pgPoolConns
	}
	if o.pgDatabase != "" {
		cfg.ConnConfig.Database = o.pgDatabase
	}
	if o.pgMeter != nil {
		cfg.ConnConfig.Tracer = o.pgMeter
	}
	return cfg, nil
}

// pgWarmConns is how many connections pgPool opens at once: one for each
// of 8 producers or workers, and one to listen.
const pgWarmConns = 9

// needsPostgresError is the error for a scenario that needs a PostgreSQL
// (scenario.needsPostgres) named without one.
func needsPostgresError(name string) string {
	return "scenario " + name + " runs on a PostgreSQL server: it needs -store postgres (a server twbench starts) or -store postgres://... (a pgx DSN)"
}

// pgPool opens a pool on the database of o (see pgPoolConfig). With
// o.pgWarm, it opens pgWarmConns connections before it returns, so that a
// figure of throughput does not time their dials (pgxpool dials when a
// connection is first wanted); without, it dials as an application's
// pool would, for the figures that time opening a store.
func pgPool(ctx context.Context, o *options) (*pgxpool.Pool, error) {
	cfg, err := pgPoolConfig(o)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil || !o.pgWarm {
		return pool, err
	}
	if err := warmPool(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connecting to -store %s: %w", redactURL(o.store), err)
	}
	return pool, nil
}

// warmPool has pool open pgWarmConns connections (or MaxConns), if it
// has fewer idle.
func warmPool(ctx context.Context, pool *pgxpool.Pool) error {
	conns := make([]*pgxpool.Conn, 0, pgWarmConns)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for range min(pgWarmConns, int(pool.Config().MaxConns)) {
		c, err := pool.Acquire(ctx)
		if err != nil {
			return err
		}
		conns = append(conns, c)
	}
	return nil
}

// pgStore is a pgstore.Store on pool, which it closes with it if it
// opened it (not o.pgPool).
type pgStore struct {
	*pgstore.Store
	pool  *pgxpool.Pool
	owned bool
}

func (s pgStore) Close() error {
	err := s.Store.Close()
	if s.owned {
		s.pool.Close()
	}
	return err
}

// openPgStore opens the store of queue, which creates its tables if
// needed, on o.pgPool or else on a pool of its own on the database of o.
func openPgStore(o *options, queue string) (pgStore, error) {
	ctx := context.Background()
	if o.pgPool != nil {
		// Each store's listener takes a connection of the pool for good:
		// dial its replacement now, not in the figure.
		if err := warmPool(ctx, o.pgPool); err != nil {
			return pgStore{}, err
		}
		s, err := pgstore.New(ctx, o.pgPool, queue)
		return pgStore{s, o.pgPool, false}, err
	}
	pool, err := pgPool(ctx, o)
	if err != nil {
		return pgStore{}, err
	}
	s, err := pgstore.New(ctx, pool, queue)
	if err != nil {
		pool.Close()
		return pgStore{}, err
	}
	return pgStore{s, pool, true}, nil
}

// pgScratch is a database that a scenario creates on the server of -store
// for its run, so that everything it writes (our tables, River's) goes
// with it when drop drops it.
type pgScratch struct {
	o    *options // -store's options, with pgDatabase the scratch's
	name string
}

// newPgScratch creates a database named twbench_ and random hex on the
// server of -store (which needs the CREATEDB privilege) and returns it,
// with a copy of o whose pools connect to it.
func newPgScratch(o *options) (*pgScratch, error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "twbench_" + hex.EncodeToString(b[:])
	if err := pgAdmin(o, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return nil, fmt.Errorf("creating a scratch database on -store %s: %w", redactURL(o.store), err)
	}
	so := *o
	so.pgDatabase = name
	return &pgScratch{o: &so, name: name}, nil
}

// drop drops the scratch database, closing any connection left on it.
func (s *pgScratch) drop() error {
	if err := pgAdmin(s.o, "DROP DATABASE IF EXISTS "+pgx.Identifier{s.name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("dropping the scratch database %s: %w", s.name, err)
	}
	return nil
}

// pgAdmin runs sql on one connection to the database that -store names
// itself (not a scratch database).
func pgAdmin(o *options, sql string) error {
	cfg, err := pgx.ParseConfig(o.store)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, sql)
	return errors.Join(err, conn.Close(ctx))
}

// pgDatabaseBytes returns the size of the database of o on disk
// (pg_database_size), all its tables and indexes in.
func pgDatabaseBytes(o *options) (int64, error) {
	ctx := context.Background()
	cfg, err := pgPoolConfig(o)
	if err != nil {
		return 0, err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, "SELECT pg_database_size(current_database())").Scan(&n)
	return n, err
}

// checkPostgres makes sure that the PostgreSQL of -store answers a
// SELECT 1 within storeCheckTimeout, dial included.
func checkPostgres(o *options) error {
	cfg, err := pgx.ParseConfig(o.store)
	if err != nil {
		return fmt.Errorf("-store %s: %w", redactURL(o.store), err)
	}
	cfg.ConnectTimeout = storeCheckTimeout
	ctx, cancel := context.WithTimeout(context.Background(), storeCheckTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("-store %s: no PostgreSQL answers there within %v: %w", redactURL(o.store), storeCheckTimeout, err)
	}
	defer conn.Close(context.Background())
	var fsync, syncCommit string
	if err := conn.QueryRow(ctx, "SELECT current_setting('fsync'), current_setting('synchronous_commit')").Scan(&fsync, &syncCommit); err != nil {
		return fmt.Errorf("-store %s: no answer to a SELECT within %v: %w", redactURL(o.store), storeCheckTimeout, err)
	}
	o.pgDurable = fsync == "on" && syncCommit != "off"
	o.pgSettings = fmt.Sprintf("fsync=%s, synchronous_commit=%s", fsync, syncCommit)
	return nil
}

// writePostgresNote writes, under the table of a run on a PostgreSQL,
// the line that says whether its figures are those of a server run as
// users run it (each commit waits for the disk) or not.
func writePostgresNote(w io.Writer, o *options) error {
	if o.pgSettings == "" {
		return nil
	}
	how := "as users run it: each commit waits for its WAL to reach the disk"
	if !o.pgDurable {
		how = "NOT as users run it: commits do not wait for the disk (the fast unsafe mode; a crash of the machine loses them)"
	}
	_, err := fmt.Fprintf(w, "PostgreSQL: %s, %s.\n", o.pgSettings, how)
	return err
}
