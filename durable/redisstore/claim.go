package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// A result is one script call's answer on one shard, in microseconds on
// the clock of the shard's node.
type result struct {
	now, nextDue, nextDeadline int64
	leases                     []durable.Lease
	deadline                   int64 // of the leases
	returned, dead             int   // by Reap
}

// Claim implements durable.Store. A limit above MaxClaim is cut to it, and
// the lease is rounded up to the microsecond. With shards, Claim takes from
// every shard, starting with a different one each call, and merges; see
// WithShards.
func (s *Store) Claim(ctx context.Context, limit int, lease time.Duration) (durable.Claimed, error) {
	if s.closed.Load() {
		return durable.Claimed{}, durable.ErrClosed
	}
	limit = max(0, min(limit, MaxClaim))
	us := micros(lease)
	rs, err := s.rounds(limit, func(sh, n int) (result, error) {
		return s.claimShard(ctx, sh, n, us)
	}, func(r result) (int, bool) {
		return len(r.leases), r.nextDue >= 0 && r.nextDue <= r.now
	})
	if err != nil {
		return durable.Claimed{}, wrap("claim", err)
	}
	m := s.merge(rs)
	c := durable.Claimed{Now: instant(m.now), NextDue: instant(m.nextDue), NextDeadline: instant(m.nextDeadline)}
	for _, r := range rs {
		c.Leases = append(c.Leases, r.leases...)
	}
	if len(rs) > 1 {
		sortLeases(c.Leases)
	}
	return c, nil
}

func (s *Store) claimShard(ctx context.Context, sh, limit int, lease int64) (result, error) {
	r, err := s.run(ctx, claimScript, sh, limit, lease)
	if err != nil {
		return result{}, err
	}
	a, err := replyArray(r, 5)
	if err != nil {
		return result{}, err
	}
	n, err := replyInts(a[:4])
	if err != nil {
		return result{}, err
	}
	res := result{now: n[0], deadline: n[1], nextDue: n[2], nextDeadline: n[3]}
	ls, err := replyArray(a[4], -1)
	if err != nil {
		return result{}, err
	}
	if len(ls)%6 != 0 {
		return result{}, fmt.Errorf("redisstore: claim: unexpected reply of %d elements", len(ls))
	}
	res.leases = make([]durable.Lease, 0, len(ls)/6)
	for i := 0; i < len(ls); i += 6 {
		id, ok := ls[i].(string)
		if !ok {
			return result{}, fmt.Errorf("redisstore: claim: unexpected ID %T", ls[i])
		}
		body, err := replyBytes(ls[i+1])
		if err != nil {
			return result{}, err
		}
		nums, err := replyInts(ls[i+2 : i+6])
		if err != nil {
			return result{}, err
		}
		res.leases = append(res.leases, durable.Lease{
			Message:  durable.Message{ID: id, Payload: body, Due: dueTime(nums[2], nums[3])},
			Attempt:  int(nums[0]),
			Token:    uint64(nums[1]),
			Deadline: time.UnixMicro(res.deadline),
		})
	}
	return res, nil
}

// Reap implements durable.Store. A limit above MaxReap is cut to it. The
// script is given the delays p.Backoff(1) to p.Backoff(min(MaxAttempts-1,
// 64)), computed once per call: the messages of one call at the same
// attempt share a delay, and an attempt after the 64th gets the 64th's.
func (s *Store) Reap(ctx context.Context, limit int, p durable.RetryPolicy) (durable.Reaped, error) {
	if s.closed.Load() {
		return durable.Reaped{}, durable.ErrClosed
	}
	limit = max(0, min(limit, MaxReap))
	table := min(max(p.MaxAttempts-1, 0), maxBackoffTable)
	args := make([]any, 0, 3+table)
	args = append(args, s.pub, 0, p.MaxAttempts)
	for a := 1; a <= table; a++ {
		var d time.Duration
		if p.Backoff != nil {
			d = p.Backoff(a)
		}
		args = append(args, micros(d))
	}
	rs, err := s.rounds(limit, func(sh, n int) (result, error) {
		a := append([]any(nil), args...)
		a[1] = n
		return s.reapShard(ctx, sh, a)
	}, func(r result) (int, bool) {
		return r.returned + r.dead, r.nextDeadline >= 0 && r.nextDeadline <= r.now
	})
	if err != nil {
		return durable.Reaped{}, wrap("reap", err)
	}
	m := s.merge(rs)
	out := durable.Reaped{Now: instant(m.now), NextDue: instant(m.nextDue), NextDeadline: instant(m.nextDeadline)}
	for _, r := range rs {
		out.Returned += r.returned
		out.Dead += r.dead
	}
	return out, nil
}

func (s *Store) reapShard(ctx context.Context, sh int, args []any) (result, error) {
	r, err := s.run(ctx, reapScript, sh, args...)
	if err != nil {
		return result{}, err
	}
	a, err := replyArray(r, 5)
	if err != nil {
		return result{}, err
	}
	n, err := replyInts(a)
	if err != nil {
		return result{}, err
	}
	return result{now: n[0], returned: int(n[1]), dead: int(n[2]), nextDue: n[3], nextDeadline: n[4]}, nil
}

// A shardResult is a result with the shard it came from.
type shardResult struct {
	result
	shard int
	err   error
}

// rounds runs call on the shards for up to limit items in all. With one
// shard it is one call. With several, the first round calls every shard at
// once, each for its share of limit (0 for some if limit is below the
// shard count: the call still reports the shard's next due time and
// deadline); then, while items are missing, the shards whose result says
// more are ready (more) are called again, one after the other, for what is
// missing. The results are in the order they came, the last of each shard
// after its others.
//
// If a shard fails, rounds returns the failure if no other shard did any
// work, and otherwise the others' results, with the failed shard's next
// due time and deadline taken as now, so that the caller comes back soon.
func (s *Store) rounds(limit int, call func(sh, n int) (result, error), done func(result) (n int, more bool)) ([]shardResult, error) {
	n := len(s.shards)
	if n == 1 {
		r, err := call(0, limit)
		if err != nil {
			return nil, err
		}
		return []shardResult{{result: r}}, nil
	}
	start := int(s.rr.Add(1) % uint64(n))
	first := make([]shardResult, n)
	_ = s.parallel(func(sh int) error {
		share := limit / n
		if (sh-start+n)%n < limit%n {
			share++
		}
		r, err := call(sh, share)
		first[sh] = shardResult{result: r, shard: sh, err: err}
		return nil
	})
	var rs []shardResult
	last := make([]int, n) // index in rs of the last result of each shard
	got, work := 0, 0
	var errs []error
	for i := range n {
		r := first[(start+i)%n]
		last[r.shard] = len(rs)
		rs = append(rs, r)
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		k, _ := done(r.result)
		got += k
		work += k
	}
	for progress := true; progress && got < limit; {
		progress = false
		for i := 0; i < n && got < limit; i++ {
			sh := (start + i) % n
			prev := rs[last[sh]]
			if prev.err != nil {
				continue
			}
			if _, more := done(prev.result); !more {
				continue
			}
			r, err := call(sh, limit-got)
			if err != nil {
				errs = append(errs, err)
				rs[last[sh]].err = err
				continue
			}
			last[sh] = len(rs)
			rs = append(rs, shardResult{result: r, shard: sh})
			k, _ := done(r)
			got += k
			work += k
			progress = progress || k > 0
		}
	}
	if len(errs) > 0 {
		if work == 0 {
			return nil, errors.Join(errs...)
		}
		s.opts.logger.Warn("redisstore: a shard failed; returning the others' results", "queue", s.queue, "err", errors.Join(errs...))
	}
	ok := rs[:0]
	failed := false
	for _, r := range rs {
		if r.err != nil {
			failed = true
			continue
		}
		ok = append(ok, r)
	}
	if failed && len(ok) > 0 {
		// Make the caller come back soon for the failed shard.
		ok[0].nextDue = ok[0].now
		ok[0].nextDeadline = ok[0].now
	}
	return ok, nil
}

// merge returns the clock, next due time and next deadline of results
// from several shards: each shard's latest, the earliest of them. On a
// single Redis all shards share one clock, and now is the latest. On a
// cluster each node has its own clock: times are moved to the clock of the
// first result, by their distance from their own result's now, and so are
// the leases' deadlines.
func (s *Store) merge(rs []shardResult) result {
	if len(rs) == 1 {
		return rs[0].result
	}
	m := result{now: -1, nextDue: -1, nextDeadline: -1}
	latest := make(map[int]int, len(s.shards))
	for i, r := range rs {
		latest[r.shard] = i
	}
	ref := rs[0].now
	for i := range rs {
		r := &rs[i]
		off := int64(0)
		if s.cluster {
			off = ref - r.now
			for j := range r.leases {
				r.leases[j].Deadline = r.leases[j].Deadline.Add(time.Duration(off) * time.Microsecond)
			}
		}
		if !s.cluster && r.now > m.now {
			m.now = r.now
		}
		if latest[r.shard] != i {
			continue
		}
		if r.nextDue >= 0 && (m.nextDue < 0 || r.nextDue+off < m.nextDue) {
			m.nextDue = r.nextDue + off
		}
		if r.nextDeadline >= 0 && (m.nextDeadline < 0 || r.nextDeadline+off < m.nextDeadline) {
			m.nextDeadline = r.nextDeadline + off
		}
	}
	if s.cluster {
		m.now = ref
	}
	return m
}

// sortLeases orders leases from several shards by due time, keeping each
// shard's order among equal ones (a stable sort).
func sortLeases(ls []durable.Lease) {
	slices.SortStableFunc(ls, func(a, b durable.Lease) int { return a.Due.Compare(b.Due) })
}
