package main

import (
	"context"
	"sync/atomic"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// countingPgStore is a pgStore that counts the calls a Queue makes of the
// methods that deliver a message: Claim, Confirm, Ack and the others of a
// lease. Each is one SQL statement on pgstore (see its package doc), so
// the counts split the statements of a job worked by what they do. It
// keeps the store's Wakeups (store.Notifier), which the queue needs.
type countingPgStore struct {
	pgStore
	claims, confirms, acks, others atomic.Int64
}

var _ store.Notifier = (*countingPgStore)(nil)

func (s *countingPgStore) Claim(ctx context.Context, p store.ClaimParams) (store.Claimed, error) {
	s.claims.Add(1)
	return s.pgStore.Claim(ctx, p)
}

func (s *countingPgStore) Confirm(ctx context.Context, p store.ConfirmParams) error {
	s.confirms.Add(1)
	return s.pgStore.Confirm(ctx, p)
}

func (s *countingPgStore) Ack(ctx context.Context, l store.LeaseRef) error {
	s.acks.Add(1)
	return s.pgStore.Ack(ctx, l)
}

func (s *countingPgStore) Retry(ctx context.Context, p store.RetryParams) error {
	s.others.Add(1)
	return s.pgStore.Retry(ctx, p)
}

func (s *countingPgStore) Extend(ctx context.Context, p store.ExtendParams) error {
	s.others.Add(1)
	return s.pgStore.Extend(ctx, p)
}

func (s *countingPgStore) Expired(ctx context.Context, limit int) (store.ExpiredLeases, error) {
	s.others.Add(1)
	return s.pgStore.Expired(ctx, limit)
}

// storeCalls are the calls counted by a countingPgStore.
type storeCalls struct{ claims, confirms, acks, others int64 }

// calls returns the calls counted so far.
func (s *countingPgStore) calls() storeCalls {
	return storeCalls{s.claims.Load(), s.confirms.Load(), s.acks.Load(), s.others.Load()}
}

// since returns the calls made between before and c.
func (c storeCalls) since(before storeCalls) storeCalls {
	return storeCalls{c.claims - before.claims, c.confirms - before.confirms, c.acks - before.acks, c.others - before.others}
}
