package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"
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
			if _, err := conn.ExecContext(ctx, expand(stmt)); err != nil && !addedBefore(ctx, conn, v+1, err) {
				return fmt.Errorf("mysqlstore: migrating to version %d: %w", v+1, err)
			}
		}
		if _, err := conn.ExecContext(ctx, expand(recordVersionSQL), v+1); err != nil {
			return fmt.Errorf("mysqlstore: migrating to version %d: %w", v+1, err)
		}
	}
	return nil
}

// errDupColumn is ER_DUP_FIELDNAME: an ALTER TABLE adds a column that is
// there already.
const errDupColumn = 1060

// addedBefore reports whether err, of a statement of version v, says that
// it adds a column there already, and every column version v adds
// (addedColumns) is there: an earlier migration added them and was cut
// before it recorded v.
func addedBefore(ctx context.Context, q queryer, v int, err error) bool {
	var my *mysql.MySQLError
	cols := addedColumns[v]
	if !errors.As(err, &my) || my.Number != errDupColumn || len(cols) == 0 {
		return false
	}
	args := []any{messagesTable}
	for _, c := range cols {
		args = append(args, c)
	}
	var n int
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.columns
WHERE table_schema = DATABASE() AND table_name = ? AND column_name IN (`+placeholders(len(cols))+`)`, args...).Scan(&n); err != nil {
		return false
	}
	return n == len(cols)
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
