package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// migrateLock is the name of the server's advisory lock (GET_LOCK) under
// which processes that start together migrate once.
const migrateLock = "timingwheel_migrate"

// migrate checks the version of the tables and, if they are older and
// apply is set, migrates them under the advisory lock.
func migrate(ctx context.Context, db *sql.DB, apply bool) error {
	v, err := version(ctx, db)
	switch {
	case err != nil:
		return fmt.Errorf("mysqlstore: reading the schema version: %w", err)
	case v > SchemaVersion:
		return fmt.Errorf("%w: version %d, this package knows %d", ErrSchemaTooNew, v, SchemaVersion)
	case v == SchemaVersion:
		return nil
	case !apply:
		return fmt.Errorf("%w: version %d, this package needs %d", ErrSchemaTooOld, v, SchemaVersion)
	}
	conn, err := db.Conn(ctx) // GET_LOCK belongs to a session
	if err != nil {
		return fmt.Errorf("mysqlstore: migrating: %w", err)
	}
	defer conn.Close()
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 60)", migrateLock).Scan(&got); err != nil {
		return fmt.Errorf("mysqlstore: migrating: %w", err)
	}
	if got.Int64 != 1 {
		return errors.New("mysqlstore: migrating: another process held the migration lock for a minute")
	}
	defer func() { _, _ = conn.ExecContext(context.WithoutCancel(ctx), "SELECT RELEASE_LOCK(?)", migrateLock) }()
	if _, err := conn.ExecContext(ctx, expand(versionTableSQL)); err != nil {
		return fmt.Errorf("mysqlstore: migrating: %w", err)
	}
	if v, err = version(ctx, conn); err != nil {
		return fmt.Errorf("mysqlstore: migrating: %w", err)
	}
	for ; v < SchemaVersion; v++ {
		for _, stmt := range migrations[v] {
			if _, err := conn.ExecContext(ctx, expand(stmt)); err != nil {
				return fmt.Errorf("mysqlstore: migrating to version %d: %w", v+1, err)
			}
		}
		if _, err := conn.ExecContext(ctx, expand(recordVersionSQL), v+1); err != nil {
			return fmt.Errorf("mysqlstore: migrating to version %d: %w", v+1, err)
		}
	}
	return nil
}

// A queryer runs a query: a *sql.DB, *sql.Conn or *sql.Tx.
type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// version returns the version of the tables: 0 if there are none.
func version(ctx context.Context, q queryer) (int, error) {
	var exists int
	err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.tables
WHERE table_schema = DATABASE() AND table_name = ?`, versionTable).Scan(&exists)
	if err != nil || exists == 0 {
		return 0, err
	}
	var v sql.NullInt64
	if err := q.QueryRowContext(ctx, expand(`SELECT MAX(version) FROM {V}`)).Scan(&v); err != nil {
		return 0, err
	}
	return int(v.Int64), nil
}
