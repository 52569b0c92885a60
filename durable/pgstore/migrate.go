package pgstore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Migrate creates the tables of the schema of opts (WithSchema; the other
// options are ignored), or migrates them to SchemaVersion, and returns
// ErrSchemaTooNew if they are newer. It takes a transaction-level advisory
// lock of the schema, so that processes that start at once migrate one
// after the other: the first does the work, the others find it done. New
// calls it, unless WithoutMigrate.
func Migrate(ctx context.Context, pool *pgxpool.Pool, opts ...Option) error {
	if pool == nil {
		return errors.New("pgstore: Migrate: nil pool")
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.check(); err != nil {
		return err
	}
	return migrate(ctx, pool, o.schema)
}

func migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	n := newNames(schema)
	// Most calls find the tables up to date: one read, no lock.
	if v, err := readVersion(ctx, pool, schema); err == nil && v == SchemaVersion {
		return nil
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey(schema)); err != nil {
			return err
		}
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+n.schema); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, n.expand(versionTableSQL)); err != nil {
			return err
		}
		var v int
		if err := tx.QueryRow(ctx, n.expand(`SELECT coalesce(max(version), 0) FROM {V}`)).Scan(&v); err != nil {
			return err
		}
		if v > SchemaVersion {
			return fmt.Errorf("%w: schema %q is at version %d, this package knows up to %d", ErrSchemaTooNew, schema, v, SchemaVersion)
		}
		for ; v < SchemaVersion; v++ {
			for _, stmt := range migrations[v] {
				if _, err := tx.Exec(ctx, n.expand(stmt)); err != nil {
					return fmt.Errorf("migrating to version %d: %w", v+1, err)
				}
			}
			if _, err := tx.Exec(ctx, n.expand(recordVersionSQL), v+1); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, ErrSchemaTooNew) {
		return err
	}
	return wrap("migrate", err)
}

// checkVersion returns nil if the tables of schema are at SchemaVersion,
// and otherwise ErrSchemaTooOld or ErrSchemaTooNew.
func checkVersion(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	v, err := readVersion(ctx, pool, schema)
	switch {
	case err != nil:
		return wrap("checking the schema version", err)
	case v < SchemaVersion:
		return fmt.Errorf("%w: schema %q is at version %d, this package needs %d", ErrSchemaTooOld, schema, v, SchemaVersion)
	case v > SchemaVersion:
		return fmt.Errorf("%w: schema %q is at version %d, this package knows up to %d", ErrSchemaTooNew, schema, v, SchemaVersion)
	}
	return nil
}

// readVersion returns the schema version of the tables of schema: 0 if
// there are none.
func readVersion(ctx context.Context, pool *pgxpool.Pool, schema string) (int, error) {
	var exists bool
	err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, newNames(schema).version).Scan(&exists)
	if err != nil || !exists {
		return 0, err
	}
	var v int
	err = pool.QueryRow(ctx, newNames(schema).expand(`SELECT coalesce(max(version), 0) FROM {V}`)).Scan(&v)
	return v, err
}

// lockKey is the advisory lock of the migrations of schema.
func lockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("timingwheel/pgstore migrate\x00" + schema))
	return int64(h.Sum64())
}
