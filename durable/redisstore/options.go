package redisstore

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// MaxShards is the largest shard count WithShards accepts.
const MaxShards = 1024

// DefaultSafetyPoll is the longest interval between two wake-ups of the
// safety poll (see WithSafetyPoll).
const DefaultSafetyPoll = 5 * time.Second

// An Option configures a Store.
type Option func(*options)

type options struct {
	shards         int
	logger         *slog.Logger
	allowEviction  bool
	safetyPoll     time.Duration
	startTimeout   time.Duration
	replicas       int
	replicaTimeout time.Duration
}

func defaultOptions() options {
	return options{
		shards:       1,
		logger:       slog.Default(),
		safetyPoll:   DefaultSafetyPoll,
		startTimeout: 10 * time.Second,
	}
}

func (o *options) check() error {
	switch {
	case o.shards < 1 || o.shards > MaxShards:
		return fmt.Errorf("redisstore: WithShards(%d): the count must be 1 to %d", o.shards, MaxShards)
	case o.safetyPoll < 0:
		return fmt.Errorf("redisstore: WithSafetyPoll(%v): negative interval", o.safetyPoll)
	case o.replicas < 0 || o.replicaTimeout < 0:
		return fmt.Errorf("redisstore: WithReplicas(%d, %v): negative count or timeout", o.replicas, o.replicaTimeout)
	case o.startTimeout <= 0:
		return fmt.Errorf("redisstore: WithStartTimeout(%v): the timeout must be positive", o.startTimeout)
	}
	return nil
}

// WithShards spreads the queue over n hash tags, {queue:0} to {queue:n-1},
// so that on Redis Cluster it spreads over the nodes that own their slots.
// A message's shard is chosen by a hash of its ID. Claim takes from every
// shard, and the order of delivery across shards is earliest first on a
// best-effort basis only: within a shard it is exact. An Enqueue of
// several messages is all-or-nothing within each shard; across shards it
// is too on a single Redis, but on Redis Cluster, where no transaction
// spans slots, a failure may leave the shards written before it.
//
// The default is 1. Every store of a queue must use the same count: New
// refuses another one (ErrShardCount), since IDs would be looked for in
// the wrong shard.
func WithShards(n int) Option {
	return func(o *options) { o.shards = n }
}

// WithLogger sets the logger for what the store cannot return as an error:
// a failed pub/sub connection, a Redis that does not let it check its
// eviction policy. The default is slog.Default(), read when the store is
// created; a logger with slog.DiscardHandler silences it.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// WithEvictionAllowed makes New accept a Redis whose maxmemory-policy is
// not noeviction, logging a warning instead of returning
// ErrUnsafeEviction. Such a Redis may delete the queue's keys when it runs
// out of memory, losing messages: use it only for tests or caches of
// messages that may be lost.
func WithEvictionAllowed() Option {
	return func(o *options) { o.allowEviction = true }
}

// WithSafetyPoll sets the longest interval of the safety poll: Wakeups
// receives at random intervals between d/2 and d, whether or not a
// notification came, to make up for notifications lost (a dropped pub/sub
// connection, for example). The default is DefaultSafetyPoll; 0 turns the
// safety poll off.
func WithSafetyPoll(d time.Duration) Option {
	return func(o *options) { o.safetyPoll = d }
}

// WithStartTimeout bounds the time New takes to check Redis (default
// 10s): New returns ErrStartTimeout once d has passed without an answer,
// even from a server that accepts connections and never replies. The
// checks may go on in the background until the client's own timeouts end
// them; they change nothing but the queue's recorded shard count.
func WithStartTimeout(d time.Duration) Option {
	return func(o *options) { o.startTimeout = d }
}

// WithDeadLetterRetention bounded the dead letters of the queue before the
// queue decided it: it does nothing now.
//
// Deprecated: use durable.WithDeadLetterRetention on the queue, which
// gives the bound to the store with each death (store.Retention).
func WithDeadLetterRetention(maxCount int, maxAge time.Duration) Option {
	return func(*options) {}
}

// Default dead-letter retention: the queue decides it now
// (durable.WithDeadLetterRetention) and passes it with each death.
//
// Deprecated: use durable.DefaultDeadLetterCount and
// durable.DefaultDeadLetterAge.
const (
	DefaultDeadLetterCount = store.DefaultDeadLetterCount
	DefaultDeadLetterAge   = store.DefaultDeadLetterAge
)
