package redisstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed64e23a5c/timingwheel/durable"
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
	// maxDeadPage is the most dead letters one script reads.
	maxDeadPage = 1000
)

// maxReadBytes is about the most payload bytes a Claim returns, and a
// script of Claim or DeadLetters reads: it stops before the message that
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

// Store is a durable.Store on Redis, shared by any number of queues in
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
}

var (
	_ durable.Store    = (*Store)(nil)
	_ durable.Notifier = (*Store)(nil)
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
// durable.ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.wake.stop()
	return nil
}

func (s *Store) run(ctx context.Context, sc *redis.Script, sh int, args ...any) (any, error) {
	if s.closed.Load() {
		return nil, durable.ErrClosed
	}
	if s.opts.replicas == 0 || readOnly(sc) {
		return sc.Run(ctx, s.client, s.shards[sh].keys, args...).Result()
	}
	var r any
	err := s.onReplicas(ctx, sh, func(c redis.Cmdable) (err error) {
		r, err = sc.Run(ctx, c, s.shards[sh].keys, args...).Result()
		return err
	})
	return r, err
}

// Enqueue implements durable.Store. It validates every message before
// writing any, and writes them with one script call, or, for a large
// batch (more than 500 messages or 4 MiB) or one over several shards,
// with a MULTI/EXEC transaction of several. With shards on Redis Cluster,
// the batch is atomic within each shard only (see WithShards).
//
// Each call has a random nonce, stored with the messages it writes: if
// go-redis sends the call again because its reply was lost, the messages
// already written are left as they are, even if a consumer has claimed
// one meanwhile (see the package documentation).
func (s *Store) Enqueue(ctx context.Context, msgs []durable.Message) error {
	if s.closed.Load() {
		return durable.ErrClosed
	}
	if len(msgs) == 0 {
		return nil
	}
	for i := range msgs {
		if err := msgs[i].Validate(); err != nil {
			return err
		}
	}
	msgs = lastOfEachID(msgs)
	nonce := fmt.Sprintf("%016x", rand.Uint64())
	// The script calls of each shard, the messages in their order.
	calls := make([][]*enqueueCall, len(s.shards))
	ncalls := 0
	for i := range msgs {
		m := &msgs[i]
		sh := shardOf(m.ID, len(s.shards))
		cs := calls[sh]
		if len(cs) == 0 || !cs[len(cs)-1].fits(len(m.Payload)) {
			cs = append(cs, &enqueueCall{args: []any{nonce, 0}})
			calls[sh] = cs
			ncalls++
		}
		cs[len(cs)-1].add(m)
	}
	if ncalls == 1 {
		for sh, cs := range calls {
			if len(cs) == 1 {
				_, err := s.run(ctx, enqueueScript, sh, cs[0].args...)
				return wrap("enqueue", err)
			}
		}
	}
	if !s.cluster {
		return wrap("enqueue", s.enqueueTx(ctx, calls, -1))
	}
	// On a cluster, one transaction per shard, all at once.
	return wrap("enqueue", s.parallel(func(sh int) error {
		if len(calls[sh]) == 0 {
			return nil
		}
		return s.enqueueTx(ctx, calls, sh)
	}))
}

// lastOfEachID returns msgs without the messages that a later one of the
// same ID replaces: writing them would change nothing in the end, and
// every ID is written once by a call, which the nonce requires.
func lastOfEachID(msgs []durable.Message) []durable.Message {
	if len(msgs) == 1 {
		return msgs
	}
	last := make(map[string]int, len(msgs))
	for i := range msgs {
		last[msgs[i].ID] = i
	}
	if len(last) == len(msgs) {
		return msgs
	}
	out := make([]durable.Message, 0, len(last))
	for i := range msgs {
		if last[msgs[i].ID] == i {
			out = append(out, msgs[i])
		}
	}
	return out
}

// An enqueueCall is the arguments of one call of the enqueue script.
type enqueueCall struct {
	args     []any // ARGV: nonce, count, then 4 per message
	n, bytes int   // messages and payload bytes
}

// fits reports whether a message of size bytes of payload may join c: a
// call holds up to maxEnqueueScript messages and maxEnqueueBytes, or one
// larger message alone.
func (c *enqueueCall) fits(size int) bool {
	return c.n < maxEnqueueScript && (c.n == 0 || c.bytes+size <= maxEnqueueBytes)
}

func (c *enqueueCall) add(m *durable.Message) {
	score, sub := dueArgs(m.Due)
	c.args = append(c.args, m.ID, m.Payload, score, sub)
	c.n++
	c.bytes += len(m.Payload)
	c.args[1] = c.n
}

// enqueueTx runs the enqueue calls of shard only (all shards if only is
// -1) in one MULTI/EXEC transaction. It uses EVAL, not EVALSHA: a NOSCRIPT
// error inside a transaction would not stop the other calls.
func (s *Store) enqueueTx(ctx context.Context, calls [][]*enqueueCall, only int) error {
	if s.closed.Load() {
		return durable.ErrClosed
	}
	tx := func(c redis.Cmdable) error {
		_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			for sh, cs := range calls {
				if only >= 0 && sh != only {
					continue
				}
				for _, c := range cs {
					enqueueScript.Eval(ctx, p, s.shards[sh].keys, c.args...)
				}
			}
			return nil
		})
		return err
	}
	if s.opts.replicas == 0 {
		return tx(s.client)
	}
	return s.onReplicas(ctx, max(only, 0), tx)
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

// Cancel implements durable.Store.
func (s *Store) Cancel(ctx context.Context, id string) (bool, error) {
	r, err := s.run(ctx, cancelScript, shardOf(id, len(s.shards)), id)
	if err != nil {
		return false, wrap("cancel", err)
	}
	switch r {
	case int64(1):
		return true, nil
	case int64(2):
		return false, durable.ErrInFlight
	}
	return false, nil
}

// Confirm implements durable.Store: one script call, which fails if an
// Enqueue or Cancel of any process took the message back first.
func (s *Store) Confirm(ctx context.Context, id string, token uint64) error {
	r, err := s.run(ctx, confirmScript, shardOf(id, len(s.shards)), id, tokenString(token))
	if err != nil {
		return wrap("confirm", err)
	}
	if r != int64(1) {
		return durable.ErrLeaseLost
	}
	return nil
}

// Ack implements durable.Store.
func (s *Store) Ack(ctx context.Context, id string, token uint64) error {
	r, err := s.run(ctx, ackScript, shardOf(id, len(s.shards)), id, tokenString(token))
	if err != nil {
		return wrap("ack", err)
	}
	if r != int64(1) {
		return durable.ErrLeaseLost
	}
	return nil
}

// Retry implements durable.Store. The delay is rounded up to the
// microsecond. The error text is kept in the hash tw:{queue}:error.
func (s *Store) Retry(ctx context.Context, id string, token uint64, p durable.RetryParams) error {
	return s.endLease(ctx, "retry", id, token, p)
}

// Release implements durable.Store. The delay is rounded up to the
// microsecond.
func (s *Store) Release(ctx context.Context, id string, token uint64, after time.Duration) error {
	return s.endLease(ctx, "release", id, token, durable.RetryParams{After: after})
}

// endLease runs retryScript, one call, for Retry and Release.
func (s *Store) endLease(ctx context.Context, op, id string, token uint64, p durable.RetryParams) error {
	r, err := s.run(ctx, retryScript, shardOf(id, len(s.shards)),
		id, tokenString(token), micros(max(p.After, 0)), flag(p.Dead), s.deadMax(), micros(s.opts.retention.MaxAge),
		p.Error, flag(p.Expired))
	if err != nil {
		return wrap(op, err)
	}
	if r == int64(-1) {
		return durable.ErrLeaseLost
	}
	return nil
}

// flag is a script's boolean argument.
func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// Extend implements durable.Store. The duration is rounded up to the
// microsecond.
func (s *Store) Extend(ctx context.Context, id string, token uint64, by time.Duration) error {
	r, err := s.run(ctx, extendScript, shardOf(id, len(s.shards)), id, tokenString(token), micros(by))
	if err != nil {
		return wrap("extend", err)
	}
	if r != int64(1) {
		return durable.ErrLeaseLost
	}
	return nil
}

// Requeue implements durable.Store.
func (s *Store) Requeue(ctx context.Context, id string, due time.Time) error {
	score, sub := dueArgs(due)
	r, err := s.run(ctx, requeueScript, shardOf(id, len(s.shards)), id, score, sub)
	if err != nil {
		return wrap("requeue", err)
	}
	if r != int64(1) {
		return durable.ErrNotFound
	}
	return nil
}

// Stats implements durable.Store. With shards, it sums their counts, and
// NextDue is the earliest of theirs, each on its node's clock.
func (s *Store) Stats(ctx context.Context) (durable.Stats, error) {
	var st durable.Stats
	var mu sync.Mutex
	next := int64(-1)
	err := s.parallel(func(sh int) error {
		r, err := s.run(ctx, statsScript, sh)
		if err != nil {
			return err
		}
		a, err := replyArray(r, 4)
		if err != nil {
			return err
		}
		n, err := replyInts(a)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		st.Pending += int(n[0])
		st.InFlight += int(n[1])
		st.Dead += int(n[2])
		if n[3] >= 0 && (next < 0 || n[3] < next) {
			next = n[3]
		}
		return nil
	})
	if err != nil {
		return durable.Stats{}, wrap("stats", err)
	}
	st.NextDue = instant(next)
	return st, nil
}

// DeadLetters implements durable.Store. A message's Due is the time it
// died, on Redis's clock. It reads the dead messages by pages of up to
// 1000 messages and about 4 MiB of payloads (one script call each), which
// together are not atomic. With shards, the lists of the shards are
// merged by time of death.
func (s *Store) DeadLetters(ctx context.Context, limit int) ([]durable.Message, error) {
	if s.closed.Load() {
		return nil, durable.ErrClosed
	}
	if limit <= 0 {
		return nil, nil
	}
	type dead struct {
		m  durable.Message
		us int64
	}
	lists := make([][]dead, len(s.shards))
	err := s.parallel(func(sh int) error {
		for len(lists[sh]) < limit {
			page := min(limit-len(lists[sh]), maxDeadPage)
			r, err := s.run(ctx, deadScript, sh, len(lists[sh]), page, maxReadBytes)
			if err != nil {
				return err
			}
			reply, err := replyArray(r, 2)
			if err != nil {
				return err
			}
			ended, err := replyInt(reply[0])
			if err != nil {
				return err
			}
			a, err := replyArray(reply[1], -1)
			if err != nil {
				return err
			}
			for i := 0; i+2 < len(a); i += 3 {
				id, _ := a[i].(string)
				body, err := replyBytes(a[i+1])
				if err != nil {
					return err
				}
				us, err := replyInt(a[i+2])
				if err != nil {
					return err
				}
				lists[sh] = append(lists[sh], dead{durable.Message{ID: id, Payload: body, Due: time.UnixMicro(us)}, us})
			}
			if ended == 1 || len(a) == 0 {
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrap("dead letters", err)
	}
	// Merge the shards' lists, each in order of death.
	var out []durable.Message
	for len(out) < limit {
		best := -1
		for sh, l := range lists {
			if len(l) > 0 && (best < 0 || l[0].us < lists[best][0].us) {
				best = sh
			}
		}
		if best < 0 {
			break
		}
		out = append(out, lists[best][0].m)
		lists[best] = lists[best][1:]
	}
	return out, nil
}

// deadMax is the most dead letters a shard keeps (0: no limit).
func (s *Store) deadMax() int {
	n := len(s.shards)
	return (s.opts.retention.MaxCount + n - 1) / n
}

// wrap adds the operation to an error from Redis; the durable package's
// errors pass unchanged.
func wrap(op string, err error) error {
	if err == nil || errors.Is(err, durable.ErrClosed) {
		return err
	}
	return fmt.Errorf("redisstore: %s: %w", op, err)
}
