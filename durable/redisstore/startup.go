package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"
)

// forEachNode calls fn on every master of a cluster, every shard of a
// ring, or the client itself.
func forEachNode(ctx context.Context, c redis.UniversalClient, fn func(context.Context, redis.UniversalClient) error) error {
	switch c := c.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return fn(ctx, n) })
	case *redis.Ring:
		return c.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error { return fn(ctx, n) })
	default:
		return fn(ctx, c)
	}
}

// checkEviction returns an error wrapping ErrUnsafeEviction if a node's
// maxmemory-policy is not noeviction: Redis would delete keys, and with
// them messages, when it runs out of memory. A node that does not answer
// CONFIG GET (managed services often disable it) is taken as unknown, and
// logged.
func (s *Store) checkEviction(ctx context.Context) error {
	var (
		mu     sync.Mutex
		unsafe []string
	)
	err := forEachNode(ctx, s.client, func(ctx context.Context, n redis.UniversalClient) error {
		cfg, err := n.ConfigGet(ctx, "maxmemory-policy").Result()
		if err != nil {
			if ctx.Err() != nil || !isRedisError(err) {
				return err
			}
			s.opts.logger.Warn("redisstore: cannot read maxmemory-policy; make sure it is noeviction", "err", err)
			return nil
		}
		policy, ok := cfg["maxmemory-policy"]
		if !ok {
			s.opts.logger.Warn("redisstore: maxmemory-policy is hidden; make sure it is noeviction")
			return nil
		}
		if policy != "noeviction" {
			mu.Lock()
			unsafe = append(unsafe, policy)
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redisstore: checking maxmemory-policy: %w", err)
	}
	if len(unsafe) == 0 {
		return nil
	}
	err = fmt.Errorf("%w: maxmemory-policy is %s, not noeviction", ErrUnsafeEviction, unsafe[0])
	if !s.opts.allowEviction {
		return err
	}
	s.opts.logger.Warn("redisstore: "+err.Error()+"; allowed by WithEvictionAllowed", "queue", s.queue)
	return nil
}

// isRedisError reports whether err is an error reply from Redis, rather
// than a failure to reach it.
func isRedisError(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && !errors.Is(err, redis.Nil)
}

// checkLayout records the shard count of the queue the first time, and
// returns ErrShardCount if it was recorded with another count.
func (s *Store) checkLayout(ctx context.Context) error {
	key := layoutKey(s.queue)
	n := len(s.shards)
	set, err := s.client.SetNX(ctx, key, n, 0).Result()
	if err != nil {
		return fmt.Errorf("redisstore: recording the shard count: %w", err)
	}
	if set {
		return nil
	}
	got, err := s.client.Get(ctx, key).Int()
	if err != nil {
		return fmt.Errorf("redisstore: reading the shard count: %w", err)
	}
	if got != n {
		return fmt.Errorf("%w: queue %q has %d shards, not %d", ErrShardCount, s.queue, got, n)
	}
	return nil
}
