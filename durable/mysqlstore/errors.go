package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

var (
	// ErrSchemaTooNew is returned by New when the tables were migrated by
	// a later version of this package than the one running (their version
	// is above SchemaVersion): this version could break them.
	ErrSchemaTooNew = errors.New("mysqlstore: the tables have a newer schema version than this package knows")
	// ErrSchemaTooOld is returned by New with WithoutMigrate when the
	// tables are absent or older than SchemaVersion: run MigrationSQL's
	// statements first.
	ErrSchemaTooOld = errors.New("mysqlstore: the tables are absent or have an older schema version; migrate them first")
	// ErrQueueName is returned by New for an empty queue name or one
	// longer than 255 bytes.
	ErrQueueName = errors.New("mysqlstore: invalid queue name")
	// ErrTxDone is wrapped by the error of EnqueueTx given a transaction
	// that was committed or rolled back.
	ErrTxDone = errors.New("mysqlstore: the transaction can take no more writes")
)

// The server's errors that roll back a statement (or a transaction) whole
// and that the same statement may then retry.
const (
	errLockWaitTimeout = 1205 // ER_LOCK_WAIT_TIMEOUT: the statement is rolled back
	errDeadlock        = 1213 // ER_LOCK_DEADLOCK: the transaction is rolled back
)

// retryable reports whether err is a deadlock or a lock wait timeout.
func retryable(err error) bool {
	var my *mysql.MySQLError
	return errors.As(err, &my) && (my.Number == errDeadlock || my.Number == errLockWaitTimeout)
}

// attempts is how many times a write that meets a deadlock or a lock wait
// timeout runs, in all.
const attempts = 5

// writeTimeout bounds a write once it started (see Store.write).
const writeTimeout = 30 * time.Second

// wrap adds the operation to an error from the database; the store
// package's errors pass unchanged.
func wrap(op string, err error) error {
	if err == nil || errors.Is(err, store.ErrClosed) || errors.Is(err, store.ErrLeaseLost) ||
		errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInFlight) || errors.Is(err, store.ErrPaused) {
		return err
	}
	if errors.Is(err, mysql.ErrInvalidConn) {
		return fmt.Errorf("mysqlstore: %s: the connection to the server broke during the call, whose write may or may not have been done: %w", op, err)
	}
	return fmt.Errorf("mysqlstore: %s: %w", op, err)
}

// wrapTx says what happened to a transaction given to EnqueueTx that
// refused the write.
func wrapTx(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return fmt.Errorf("%w: EnqueueTx on a transaction already committed or rolled back (%w)", ErrTxDone, err)
	}
	if retryable(err) {
		return fmt.Errorf("mysqlstore: EnqueueTx: %w (the server rolled back the statement or the whole transaction: roll it back and run it again)", err)
	}
	return wrap("EnqueueTx", err)
}

// ctxErr returns an error wrapping ctx.Err() if ctx has ended: a method
// then writes nothing.
func ctxErr(op string, ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("mysqlstore: %s: %w", op, err)
	}
	return nil
}
