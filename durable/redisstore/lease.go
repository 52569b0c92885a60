package redisstore

import (
	"context"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// A lease's life after Claim: Confirm, Ack, Retry, Release and Extend.

// Confirm implements durable.Store: one script call, which fails if an
// Enqueue or Cancel of any process took the message back first.
func (s *Store) Confirm(ctx context.Context, id string, token uint64) error {
	r, err := s.run(ctx, confirmScript, shardOf(id, len(s.shards)), id, tokenString(token))
	if err != nil {
		return wrap("confirm", err)
	}
	switch r {
	case int64(1):
		return nil
	case int64(2):
		return durable.ErrPaused
	}
	return durable.ErrLeaseLost
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

// deadMax is the most dead letters a shard keeps (0: no limit).
func (s *Store) deadMax() int {
	n := len(s.shards)
	return (s.opts.retention.MaxCount + n - 1) / n
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
