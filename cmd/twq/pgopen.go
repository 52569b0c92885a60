package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seed64e23a5c/timingwheel/durable/pgstore"
)

// parsePostgresTarget reads a postgres:// or postgresql:// URL: a
// connection URL as libpq and pgx take it, whose query also names the
// queue (?queue=NAME) and, optionally, the schema of pgstore's tables
// (?schema=S, "public" by default).
func parsePostgresTarget(s string) (target, error) {
	u, err := url.Parse(s)
	if err != nil {
		return target{}, usagef("bad PostgreSQL URL %s: %v", redact(s), err)
	}
	q := u.Query()
	name := q.Get("queue")
	if name == "" {
		return target{}, usagef("the URL %s names no queue: add ?queue=NAME", u.Redacted())
	}
	schema := q.Get("schema")
	if schema == "" {
		schema = pgstore.DefaultSchema
	}
	shown := u.Redacted()
	q.Del("queue")
	q.Del("schema")
	u.RawQuery = q.Encode()
	cfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		// pgx's message may quote the URL, password included.
		return target{}, usagef("bad PostgreSQL URL %s", u.Redacted())
	}
	return target{pg: cfg, schema: schema, queue: name, shown: shown}, nil
}

// openPostgres opens the queue t names on PostgreSQL, waiting up to
// o.timeout to connect. It never creates nor migrates pgstore's tables
// (pgstore.WithoutMigrate): they must be there, at this version. A queue
// on PostgreSQL is its rows in the shared tables, so a queue name with
// none is an empty queue, not an error. For a read-only command the
// connections are read-only (default_transaction_read_only): PostgreSQL
// itself refuses any write.
func openPostgres(ctx context.Context, t target, o options, readOnly bool) (*handle, error) {
	cfg := t.pg.Copy()
	cfg.ConnConfig.ConnectTimeout = o.timeout
	cfg.MaxConns = 4
	if readOnly {
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", t, err)
	}
	pctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, pgReachError(t, o, err)
	}
	s, err := pgstore.New(pctx, pool, t.queue, pgstore.WithSchema(t.schema), pgstore.WithoutMigrate())
	switch {
	case errors.Is(err, pgstore.ErrSchemaTooOld):
		pool.Close()
		return nil, fmt.Errorf("%s has no pgstore tables at this version in schema %q (twq creates and migrates none: run the service, or pgstore.Migrate): %w", t, t.schema, err)
	case err != nil:
		pool.Close()
		return nil, fmt.Errorf("opening %s: %w", t, err)
	}
	return &handle{store: s, close: func() {
		_ = s.Close()
		pool.Close()
	}}, nil
}

// pgReachError explains a failure to connect to PostgreSQL.
func pgReachError(t target, o options, err error) error {
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr):
		return fmt.Errorf("%s refused the connection: %s (SQLSTATE %s)", t, pgErr.Message, pgErr.Code)
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return fmt.Errorf("no answer from PostgreSQL at %s within %v", t, o.timeout)
	}
	return fmt.Errorf("cannot reach PostgreSQL at %s: %w", t, err)
}
