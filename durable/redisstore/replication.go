package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNotReplicated is returned by a write (Enqueue, Claim, Confirm, Ack,
// Retry, Extend, Cancel, Requeue) of a store made WithReplicas when
// fewer replicas than asked confirmed it in time. The write is done on
// the primary, and is not known to be on the replicas: a failover now may
// lose it. An Enqueue or Cancel may be repeated (it is an upsert, or
// finds nothing); an Ack that failed so leaves a lease that the store
// keeps as acked unless a failover loses it, when the message is
// delivered again.
var ErrNotReplicated = errors.New("redisstore: write not confirmed by the replicas")

// WithReplicas makes every write wait until n replicas have it (Redis's
// WAIT), for at most timeout, and fail with ErrNotReplicated when fewer
// confirm in time. Without it (n = 0, the default) a write is acknowledged
// by the primary alone: replication is asynchronous, so a failover
// (Sentinel, Cluster, or a replica promoted by hand) loses the writes of
// the last moments before the primary died. With it, a write that
// returned nil is on n replicas, and a failover to one of them keeps it.
// A timeout of 0 waits for ever. Each write costs one round trip more,
// and the time the replicas take; that includes the Confirm a Queue makes
// at the due time of a message it claimed ahead, so deliveries are later
// by that much. WAIT does not make the replicas fsync: a failover keeps
// the writes, a power cut of every node at once needs AOF with
// appendfsync always as well.
func WithReplicas(n int, timeout time.Duration) Option {
	return func(o *options) { o.replicas, o.replicaTimeout = n, timeout }
}

// readOnly reports whether sc writes nothing, and so needs no WAIT.
func readOnly(sc *redis.Script) bool {
	return sc == statsScript || sc == shardedScript || sc == getScript || sc == listScript
}

// node returns the client of the node that holds shard sh: the client
// itself, or on a cluster the master of the shard's slot.
func (s *Store) node(ctx context.Context, sh int) (redis.UniversalClient, error) {
	c, ok := s.client.(*redis.ClusterClient)
	if !ok {
		return s.client, nil
	}
	return c.MasterForKey(ctx, s.shards[sh].keys[0])
}

// onReplicas runs write on one connection of shard sh's node, and then
// WAIT on that connection: WAIT counts the replicas that have every write
// of its connection.
func (s *Store) onReplicas(ctx context.Context, sh int, write func(redis.Cmdable) error) error {
	n, err := s.node(ctx, sh)
	if err != nil {
		return err
	}
	c, ok := n.(*redis.Client)
	if !ok {
		return fmt.Errorf("redisstore: WithReplicas needs a single node, Sentinel or Cluster client, not %T", n)
	}
	conn := c.Conn()
	defer conn.Close()
	if err := write(conn); err != nil {
		return err
	}
	got, err := conn.Wait(ctx, s.opts.replicas, s.opts.replicaTimeout).Result()
	if err != nil {
		return fmt.Errorf("%w: WAIT: %w", ErrNotReplicated, err)
	}
	if got < int64(s.opts.replicas) {
		return fmt.Errorf("%w: %d of %d replicas within %v", ErrNotReplicated, got, s.opts.replicas, s.opts.replicaTimeout)
	}
	return nil
}
