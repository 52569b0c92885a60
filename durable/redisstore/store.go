package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/seed64e23a5c/timingwheel/internal/coalesce"
)

// Batch limits: each bounds the work of one script, so that a backlog of
// any size coming due never blocks Redis for more than a few
// milliseconds.
const (
	// MaxClaim is the most messages one Claim leases: a larger limit is
	// cut to it.
	MaxClaim = 500
	// MaxReap is the most expired leases one Expired returns (and so one
	// durable.Reap ends).
	MaxReap = 500
	// maxEnqueueScript is the most messages, and maxEnqueueBytes the most
	// payload bytes, one enqueue script writes. A larger Enqueue runs
	// several in one MULTI/EXEC transaction.
	maxEnqueueScript = 500
	maxEnqueueBytes  = 4 << 20
)

// maxReadBytes is about the most payload bytes a Claim returns, and a
// script of Claim or List reads: it stops before the message that
// would take it over, unless that is its first. A variable for the tests.
var maxReadBytes int64 = 4 << 20

var (
	// ErrUnsafeEviction is returned by New when Redis's maxmemory-policy
	// is not noeviction: out of memory, Redis would delete keys, and
	// messages with them. See WithEvictionAllowed.
	ErrUnsafeEviction = errors.New("redisstore: Redis may evict keys, which loses messages")
	// ErrShardCount is returned by New when the queue was created with
	// another shard count (WithShards).
	ErrShardCount = errors.New("redisstore: the queue has another shard count")
	// ErrStartTimeout is returned by New when Redis does not answer its
	// checks within the start timeout (WithStartTimeout). It wraps
	// context.DeadlineExceeded.
	ErrStartTimeout = fmt.Errorf("redisstore: start timeout: %w", context.DeadlineExceeded)
	// ErrQueueName is returned by New for an empty queue name, or one
	// with a brace, which would change the hash tag of its keys.
	ErrQueueName = errors.New("redisstore: invalid queue name")
)

// Store is a store.Store on Redis, shared by any number of queues in
// any number of processes. See the package documentation for its layout.
type Store struct {
	client  redis.UniversalClient
	queue   string
	opts    options
	shards  []shard
	cluster bool

	rr     atomic.Uint64 // rotates the first shard of Claim and Reap
	closed atomic.Bool
	wake   notifier
	// The calls under way at once share round trips: the Enqueue calls,
	// and the acks and confirmations of each shard.
	enqueues *coalesce.Coalescer[[]store.Message]
	leases   []*coalesce.Coalescer[leaseArg]
}

var (
	_ store.Store    = (*Store)(nil)
	_ store.Notifier = (*Store)(nil)
)

// New returns the store of the queue named queue on client, which may be a
// single node, Sentinel or Cluster client; the store does not close it.
// New checks that Redis does not evict keys (ErrUnsafeEviction) and that
// the queue's shard count is the one given (ErrShardCount). It returns
// within the start timeout (WithStartTimeout), with ErrStartTimeout if
// Redis has not answered by then, whatever the client's own timeouts.
func New(client redis.UniversalClient, queue string, opts ...Option) (*Store, error) {
	if client == nil {
		return nil, errors.New("redisstore: nil client")
	}
	if err := checkQueueName(queue); err != nil {
		return nil, err
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	s := &Store{client: client, queue: queue, opts: o}
	_, s.cluster = client.(*redis.ClusterClient)
	s.shards = newShards(queue, o.shards)
	s.wake.init(s)
	s.enqueues = newEnqueueCoalescer(s)
	s.leases = newLeaseCoalescers(s)

	if err := s.startChecks(); err != nil {
		return nil, err
	}
	return s, nil
}

// startChecks makes New's checks within the start timeout. A client does
// not always end a command at its context's deadline (go-redis applies it
// to reads and writes, but not to every step of making a connection, and
// retries), so the checks run in a goroutine that New stops waiting for
// at the timeout; it ends when the client gives up.
func (s *Store) startChecks() error {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.startTimeout)
	done := make(chan error, 1)
	go func() {
		defer cancel()
		done <- s.check(ctx)
	}()
	t := time.NewTimer(s.opts.startTimeout)
	defer t.Stop()
	timedOut := func() error {
		return fmt.Errorf("%w: Redis did not answer the checks of New within %v", ErrStartTimeout, s.opts.startTimeout)
	}
	select {
	case err := <-done:
		if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			// The checks' own deadline, the same as the timer's, ended
			// them first.
			return fmt.Errorf("%w (%v)", timedOut(), err)
		}
		return err
	case <-t.C:
		cancel()
		return timedOut()
	}
}

func (s *Store) check(ctx context.Context) error {
	if err := s.client.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redisstore: %w", err)
	}
	if err := s.checkEviction(ctx); err != nil {
		return err
	}
	return s.checkLayout(ctx)
}

// Queue returns the name of the store's queue.
func (s *Store) Queue() string { return s.queue }

// Close stops the store's pub/sub connections and goroutines. It does not
// close the client, nor delete anything. Methods called after it return
// store.ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.wake.stop()
	return nil
}

func (s *Store) run(ctx context.Context, sc *redis.Script, sh int, args ...any) (any, error) {
	return s.runKeys(ctx, sc, sh, s.shards[sh].keys, args...)
}

// runKeys is run with the KEYS given, which must hash to shard sh's slot
// on a cluster.
func (s *Store) runKeys(ctx context.Context, sc *redis.Script, sh int, keys []string, args ...any) (any, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	if s.opts.replicas == 0 || readOnly(sc) {
		return sc.Run(ctx, s.client, keys, args...).Result()
	}
	var r any
	err := s.onReplicas(ctx, sh, func(c redis.Cmdable) (err error) {
		r, err = sc.Run(ctx, c, keys, args...).Result()
		return err
	})
	return r, err
}

// parallel calls fn for every shard, at once if there are several, and
// joins their errors.
func (s *Store) parallel(fn func(sh int) error) error {
	if len(s.shards) == 1 {
		return fn(0)
	}
	errs := make([]error, len(s.shards))
	var wg sync.WaitGroup
	for sh := range s.shards {
		wg.Go(func() { errs[sh] = fn(sh) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// wrap adds the operation to an error from Redis; the durable package's
// errors pass unchanged. A closed client cannot come back: its error
// wraps store.ErrClosed too, so that a queue's Run returns it rather than
// retrying.
func wrap(op string, err error) error {
	if err == nil || errors.Is(err, store.ErrClosed) {
		return err
	}
	if errors.Is(err, redis.ErrClosed) {
		return fmt.Errorf("redisstore: %s: %w (%w)", op, store.ErrClosed, err)
	}
	return fmt.Errorf("redisstore: %s: %w", op, err)
}
