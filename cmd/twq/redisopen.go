package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"

	"github.com/seed64e23a5c/timingwheel/durable/redisstore"
)

// silenceRedisLog stops go-redis from logging: its pool writes a line to
// stderr for each failed dial, while twq reports every error itself, on
// one line.
func silenceRedisLog() { redis.SetLogger(&logging.VoidLogger{}) }

// layoutKey is the key where redisstore keeps a queue's shard count: it
// exists once any store has opened the queue (redisstore's keys.go).
func layoutKey(queue string) string { return "tw:{" + queue + "}:shards" }

// openRedis opens the queue t names on Redis, waiting up to o.timeout for
// Redis to answer. It reads the queue's shard count first, and fails if
// the queue does not exist: redisstore.New would record the count (a
// write, and a new queue). Since the count is then there, New's SETNX
// changes nothing. For a read-only command it accepts a Redis that may
// evict keys (New refuses one by default), since it changes nothing.
func openRedis(ctx context.Context, t target, o options, readOnly bool) (*handle, error) {
	ro := *t.redis
	ro.DialTimeout = o.timeout
	ro.ContextTimeoutEnabled = true
	ro.MaxRetries = -1
	ro.DialerRetries = 1
	client := redis.NewClient(&ro)

	shards, err := queueShards(ctx, client, t, o)
	if err != nil {
		_ = client.Close()
		return nil, err
	}
	opts := []redisstore.Option{redisstore.WithShards(shards), redisstore.WithStartTimeout(o.timeout)}
	if readOnly {
		opts = append(opts, redisstore.WithEvictionAllowed())
	}
	s, err := redisstore.New(client, t.queue, opts...)
	if err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("opening %s: %w", t, err)
	}
	return &handle{store: s, close: func() {
		_ = s.Close()
		_ = client.Close()
	}}, nil
}

// queueShards returns the shard count of t's queue, or errNoQueue.
func queueShards(ctx context.Context, client *redis.Client, t target, o options) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	n, err := client.Get(ctx, layoutKey(t.queue)).Int()
	switch {
	case errors.Is(err, redis.Nil):
		return 0, fmt.Errorf("%s has no queue %q (twq opens existing queues only)", t, t.queue)
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return 0, fmt.Errorf("no answer from Redis at %s within %v", t, o.timeout)
	case err != nil && isRedisReply(err):
		return 0, fmt.Errorf("%s refused to tell the queue's shard count: %w", t, err)
	case err != nil:
		return 0, fmt.Errorf("cannot reach Redis at %s: %w", t, err)
	}
	return n, nil
}

// isTimeout reports whether err is a network timeout.
func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// isRedisReply reports whether err is an error reply from Redis (a wrong
// password, a wrong type), rather than a failure to reach it.
func isRedisReply(err error) bool {
	var re redis.Error
	return errors.As(err, &re) || redis.IsAuthError(err) || redis.IsPermissionError(err)
}
