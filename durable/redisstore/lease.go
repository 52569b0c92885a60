package redisstore

import (
	"context"
	"fmt"

	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/seed64e23a5c/timingwheel/internal/coalesce"
)

// A lease's life after Claim: Confirm, Ack, Retry and Extend.

// Confirm implements store.Store: one script call, which fails if an
// Enqueue or Cancel of any process took the message back first. With
// p.By, the same script moves the lease's deadline to p.By (rounded up
// to the microsecond) from Redis's now, as Extend does. The acks and
// confirmations of a shard under way at the same time share the call (see
// coalesce.Coalescer).
func (s *Store) Confirm(ctx context.Context, p store.ConfirmParams) error {
	return s.leaseCall(ctx, leaseArg{p.Lease.ID, tokenString(p.Lease.Token), 'c', micros(p.By)})
}

// Ack implements store.Store: one script call, shared with the acks and
// confirmations of the shard under way at the same time (see
// coalesce.Coalescer).
func (s *Store) Ack(ctx context.Context, l store.LeaseRef) error {
	return s.leaseCall(ctx, leaseArg{l.ID, tokenString(l.Token), 'a', 0})
}

// A leaseArg is the argument of an ack or a confirmation.
type leaseArg struct {
	id, token string
	kind      byte  // 'a' for an ack, 'c' for a confirmation (see leasesScript)
	by        int64 // a confirmation's new deadline from now, µs (0: kept)
}

func (l leaseArg) op() string {
	if l.kind == 'c' {
		return "confirm"
	}
	return "ack"
}

// leaseCall sends the ack or confirmation l through the coalescer of its
// shard.
func (s *Store) leaseCall(ctx context.Context, l leaseArg) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return s.leases[shardOf(l.id, len(s.shards))].Do(ctx, l)
}

// newLeaseCoalescers returns a coalescer a shard of the acks and
// confirmations, which run leasesScript on many leases, one call per ID.
func newLeaseCoalescers(s *Store) []*coalesce.Coalescer[leaseArg] {
	cs := make([]*coalesce.Coalescer[leaseArg], len(s.shards))
	for sh := range cs {
		cs[sh] = &coalesce.Coalescer[leaseArg]{
			Take: coalesce.Distinct(MaxClaim, func(l leaseArg) string { return l.id }),
			Send: func(batch []*coalesce.Call[leaseArg]) { s.sendLeases(sh, batch) },
		}
	}
	return cs
}

// sendLeases runs leasesScript on the leases of batch, all of shard sh: a
// call's outcome is nil if its lease was current, ErrLeaseLost if not,
// ErrPaused if the script says so (a Confirm while paused), or the
// error of the call.
func (s *Store) sendLeases(sh int, batch []*coalesce.Call[leaseArg]) {
	args := make([]any, 0, 1+4*len(batch))
	args = append(args, len(batch))
	for _, c := range batch {
		args = append(args, c.Arg.id, c.Arg.token, string(c.Arg.kind), c.Arg.by)
	}
	ctx, cancel := coalesce.Context(batch)
	defer cancel()
	r, err := s.run(ctx, leasesScript, sh, args...)
	outcomes, ok := r.([]any)
	if err == nil && (!ok || len(outcomes) != len(batch)) {
		err = fmt.Errorf("%d outcomes for %d leases", len(outcomes), len(batch))
	}
	for i, c := range batch {
		if err != nil {
			c.Err = wrap(c.Arg.op(), err)
			continue
		}
		switch outcomes[i] {
		case int64(1):
			c.Err = nil
		case int64(2):
			c.Err = store.ErrPaused
		default:
			c.Err = store.ErrLeaseLost
		}
	}
}

// Retry implements store.Store: one call of retryScript. The delay is
// rounded up to the microsecond. The error text is kept in the hash
// tw:{queue}:error. A death trims the dead letters to p.Retention in the
// same call.
func (s *Store) Retry(ctx context.Context, p store.RetryParams) error {
	id := p.Lease.ID
	r, err := s.run(ctx, retryScript, shardOf(id, len(s.shards)),
		id, tokenString(p.Lease.Token), micros(max(p.After, 0)), flag(p.Dead), s.deadMax(p.Retention),
		micros(p.Retention.MaxAge), p.Error, flag(p.Expired), flag(p.Unhanded))
	if err != nil {
		return wrap("retry", err)
	}
	if r == int64(-1) {
		return store.ErrLeaseLost
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

// deadMax is the most dead letters a shard keeps under r (0: no limit).
func (s *Store) deadMax(r store.Retention) int {
	n := len(s.shards)
	return (r.MaxCount + n - 1) / n
}

// Extend implements store.Store. The duration is rounded up to the
// microsecond.
func (s *Store) Extend(ctx context.Context, p store.ExtendParams) error {
	r, err := s.run(ctx, extendScript, shardOf(p.Lease.ID, len(s.shards)), p.Lease.ID, tokenString(p.Lease.Token), micros(p.By))
	if err != nil {
		return wrap("extend", err)
	}
	if r != int64(1) {
		return store.ErrLeaseLost
	}
	return nil
}
