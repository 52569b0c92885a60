package pgstore

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

var (
	// ErrSchemaTooNew is returned by New and Migrate when the tables were
	// migrated by a later version of this package than the one running
	// (their version is above SchemaVersion): this version could break
	// them. Upgrade the program, or restore the older tables.
	ErrSchemaTooNew = errors.New("pgstore: the tables have a newer schema version than this package knows")
	// ErrSchemaTooOld is returned by New with WithoutMigrate when the
	// tables are absent or older than SchemaVersion: run Migrate, or the
	// statements of MigrationSQL, first.
	ErrSchemaTooOld = errors.New("pgstore: the tables are absent or have an older schema version; migrate them first")
	// ErrQueueName is returned by New for an empty queue name, or one that
	// is not valid UTF-8 or holds a NUL byte, which PostgreSQL's text
	// cannot.
	ErrQueueName = errors.New("pgstore: invalid queue name")
	// ErrTxDone is wrapped by the error of EnqueueTx given a transaction
	// that can write nothing more: committed, rolled back, or aborted by
	// an earlier error (which the caller must roll back).
	ErrTxDone = errors.New("pgstore: the transaction can take no more writes")
)

// wrap adds the operation to an error from PostgreSQL; the durable
// package's errors pass unchanged. A closed pool cannot come back: its
// error wraps store.ErrClosed too, so that a queue's Run returns it
// rather than retrying.
func wrap(op string, err error) error {
	if err == nil || errors.Is(err, store.ErrClosed) || errors.Is(err, store.ErrLeaseLost) ||
		errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInFlight) {
		return err
	}
	if errors.Is(err, puddle.ErrClosedPool) {
		return fmt.Errorf("pgstore: %s: %w (%w)", op, store.ErrClosed, err)
	}
	return fmt.Errorf("pgstore: %s: %w", op, err)
}

// wrapTx says what happened to a transaction given to EnqueueTx that
// refused the write.
func wrapTx(err error) error {
	if errors.Is(err, pgx.ErrTxClosed) {
		return fmt.Errorf("%w: EnqueueTx on a transaction already committed or rolled back (%w)", ErrTxDone, err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "25P02" { // in_failed_sql_transaction
		return fmt.Errorf("%w: EnqueueTx on a transaction aborted by an earlier error; roll it back (%w)", ErrTxDone, err)
	}
	return wrap("EnqueueTx", err)
}
