package pgstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/seed64e23a5c/timingwheel/internal/coalesce"
)

// Batch limits, each bounding the work of one statement.
const (
	// MaxClaim is the most messages one Claim leases: a larger limit is
	// cut to it.
	MaxClaim = 500
	// MaxReap is the most expired leases one Expired returns (and so one
	// durable.Reap ends).
	MaxReap = 500
	// maxClaimBytes is about the most payload bytes a Claim returns: it
	// stops before the message that would take it over, unless that is
	// its first.
	maxClaimBytes = 4 << 20
	// maxDueSoon caps Claimed.DueSoon, and so the index entries a claim
	// reads to count it.
	maxDueSoon = 100
	// maxEnqueueRows and maxEnqueueBytes bound one statement of Enqueue:
	// a larger batch is written by several, in one transaction.
	maxEnqueueRows  = 1000
	maxEnqueueBytes = 16 << 20
)

// Store is a store.Store on PostgreSQL, shared by any number of queues
// in any number of processes. See the package documentation for its
// layout and the statements each method costs.
type Store struct {
	pool *pgxpool.Pool
	// keepsPlans: the pool's connections prepare and keep their
	// statements (see queryGeneric).
	keepsPlans bool
	queue      string
	opts       options
	channel    string // of NOTIFY and LISTEN
	sql        statements

	closed atomic.Bool
	wake   notifier

	// The calls that share statements (see coalesce.Coalescer).
	leases   *coalesce.Coalescer[lease]
	enqueues *coalesce.Coalescer[*enqueueBatch]
}

var (
	_ store.Store    = (*Store)(nil)
	_ store.Notifier = (*Store)(nil)
)

// New returns the store of the queue named queue, creating its tables if
// they are absent (in the schema "public" unless WithSchema). Many queues
// share the tables; many processes share a queue. New migrates tables of
// an older version, and refuses those of a newer one (ErrSchemaTooNew);
// with WithoutMigrate it only checks the version. The store does not
// close pool.
func New(ctx context.Context, pool *pgxpool.Pool, queue string, opts ...Option) (*Store, error) {
	if pool == nil {
		return nil, errors.New("pgstore: nil pool")
	}
	if queue == "" || !utf8.ValidString(queue) || strings.ContainsRune(queue, 0) {
		return nil, fmt.Errorf("%w: %q", ErrQueueName, queue)
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	if o.migrate {
		if err := migrate(ctx, pool, o.schema); err != nil {
			return nil, err
		}
	} else if err := checkVersion(ctx, pool, o.schema); err != nil {
		return nil, err
	}
	s := &Store{pool: pool, queue: queue, opts: o, channel: channelName(o.schema, queue),
		keepsPlans: pool.Config().ConnConfig.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement}
	s.sql = newStatements(newNames(o.schema))
	s.leases = newLeaseCoalescer(s)
	s.enqueues = newEnqueueCoalescer(s)
	s.wake.init(s)
	return s, nil
}

// channelName is the NOTIFY channel of queue in schema: a hash of both,
// since a channel name is at most 63 bytes and queue names are not.
func channelName(schema, queue string) string {
	h := sha256.Sum256([]byte(schema + "\x00" + queue))
	return "timingwheel_" + hex.EncodeToString(h[:16])
}

// Queue returns the name of the store's queue.
func (s *Store) Queue() string { return s.queue }

// Schema returns the schema of the store's tables.
func (s *Store) Schema() string { return s.opts.schema }

// Close stops the store's listening connection and its goroutines, if
// Wakeups started them. It does not close the pool, nor delete anything.
// Methods called after it return store.ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.wake.close()
	return nil
}

// check returns store.ErrClosed after Close. Every method starts with it.
func (s *Store) check() error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return nil
}
