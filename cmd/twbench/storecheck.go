package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"
)

// storeCheckTimeout bounds the check of -store's Redis, from the first
// dial to PING's answer.
const storeCheckTimeout = 1500 * time.Millisecond

// silenceRedisLog stops go-redis from logging: its pool writes a line to
// stderr for each failed dial, while twbench reports every error itself,
// on one line.
func silenceRedisLog() { redis.SetLogger(&logging.VoidLogger{}) }

// checkStore makes sure, before anything runs, that the Redis of -store
// answers, when the durable or asynq scenario is to run on one: a single PING on
// a single connection, dialled once, with no retry, all within
// storeCheckTimeout; and likewise that its PostgreSQL answers a SELECT 1,
// when the durable or river scenario is to run on one; and that its MySQL
// answers a SELECT 1, when the durable scenario is to run on one.
func checkStore(o *options) error {
	if isPostgresURL(o.store) && (o.has("durable") || o.has("river")) {
		return checkPostgres(o)
	}
	if isMySQLURL(o.store) && o.has("durable") {
		return checkMySQL(o)
	}
	if !isRedisURL(o.store) || (!o.has("durable") && !o.has("asynq")) {
		return nil
	}
	ro, err := redis.ParseURL(o.store)
	if err != nil {
		return fmt.Errorf("-store %s: %w", redactURL(o.store), err)
	}
	ro.DialTimeout = storeCheckTimeout
	ro.ReadTimeout = storeCheckTimeout
	ro.WriteTimeout = storeCheckTimeout
	ro.ContextTimeoutEnabled = true
	ro.MaxRetries = -1
	ro.DialerRetries = 1
	ro.PoolSize = 1
	client := redis.NewClient(ro)
	defer client.Close()

	ctx, cancel := context.WithTimeout(context.Background(), storeCheckTimeout)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			return fmt.Errorf("-store %s: no answer to PING within %v: %w", redactURL(o.store), storeCheckTimeout, err)
		}
		return fmt.Errorf("-store %s: no Redis answers there: %w", redactURL(o.store), err)
	}
	return nil
}

// isTimeout reports whether err is a network timeout.
func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// redactURL returns the URL with its password, if any, replaced by xxxxx.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return s
	}
	return u.Redacted()
}
