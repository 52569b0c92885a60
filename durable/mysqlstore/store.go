package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/seed64e23a5c/timingwheel/internal/coalesce"
)

// Batch limits, each bounding the work of one statement.
const (
	// MaxClaim is the most messages one Claim leases: a larger limit is
	// cut to it.
	MaxClaim = 500
	// MaxReap is the most expired leases one Expired returns.
	MaxReap = 500
	// maxClaimBytes is about the most payload bytes a Claim returns: it
	// stops before the message that would take it over, unless that is
	// its first.
	maxClaimBytes = 4 << 20
	// maxDueSoon caps Claimed.DueSoon, and so the index entries a claim
	// reads to count it.
	maxDueSoon = 100
	// maxEnqueueRows and maxEnqueueBytes bound one statement of Enqueue
	// (the server's max_allowed_packet is 16 MiB by default, and a
	// payload's text may take twice its size): a larger batch is written
	// by several, in one transaction.
	maxEnqueueRows  = 1000
	maxEnqueueBytes = 4 << 20
	// maxQueueLen is the longest queue name, in bytes.
	maxQueueLen = 255
)

// Store is a store.Store on MySQL or MariaDB, shared by any number of
// queues in any number of processes. See the package documentation for
// its layout and the statements each method costs.
type Store struct {
	db    *sql.DB
	queue string
	opts  options

	closed atomic.Bool
	wake   notifier
	// leases coalesces the acks and confirmations under way at once.
	leases *coalesce.Coalescer[leaseCall]
}

var (
	_ store.Store        = (*Store)(nil)
	_ store.Notifier     = (*Store)(nil)
	_ store.Pauser       = (*Store)(nil)
	_ store.SeriesKeeper = (*Store)(nil)
)

// New returns the store of the queue named queue on db, a *sql.DB of
// github.com/go-sql-driver/mysql, creating its tables if they are absent.
// Many queues share the tables; many processes share a queue. New
// migrates tables of an older version, and refuses those of a newer one
// (ErrSchemaTooNew); with WithoutMigrate it only checks the version. The
// store does not close db.
func New(ctx context.Context, db *sql.DB, queue string, opts ...Option) (*Store, error) {
	if db == nil {
		return nil, errors.New("mysqlstore: nil *sql.DB")
	}
	if queue == "" || len(queue) > maxQueueLen {
		return nil, fmt.Errorf("%w: %q (1 to %d bytes)", ErrQueueName, queue, maxQueueLen)
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	if err := migrate(ctx, db, o.migrate); err != nil {
		return nil, err
	}
	s := &Store{db: db, queue: queue, opts: o}
	s.leases = newLeaseCoalescer(s)
	s.wake.init(s)
	return s, nil
}

// Queue returns the name of the store's queue.
func (s *Store) Queue() string { return s.queue }

// Close stops the store's poll, if Wakeups started it. It does not close
// the *sql.DB, nor delete anything. Methods called after it return
// store.ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.wake.close()
	return nil
}

// check returns store.ErrClosed after Close, and an error wrapping
// ctx.Err() if ctx has ended. Every method starts with it.
func (s *Store) check(ctx context.Context, op string) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return ctxErr(op, ctx)
}

// write runs f, a write of one statement or one transaction of the store's
// own, with the rules of the package doc's Statements: on a context that
// the caller's cancellation does not reach, bounded by writeTimeout, so
// that a write once started is done whole or not at all (a transaction
// ended midway is rolled back, but an autocommit statement or a COMMIT
// cut by a cancellation may be done or not); and again, up to attempts
// times, if the server rolled it back for a deadlock or a lock wait
// timeout.
func (s *Store) write(ctx context.Context, op string, f func(ctx context.Context) error) error {
	if err := s.check(ctx, op); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	var err error
	for i := range attempts {
		if err = f(wctx); !retryable(err) {
			break
		}
		time.Sleep(time.Duration(i+1) * time.Millisecond)
	}
	return wrap(op, err)
}

// inTx runs f in a transaction of its own at READ COMMITTED (whose
// locking reads lock the rows they return and no gaps: see the package
// doc), and commits it if f returns nil.
func (s *Store) inTx(ctx context.Context, f func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}
