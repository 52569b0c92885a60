package redisstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// A result is one script call's answer on one shard, in microseconds on
// the clock of the shard's node.
type result struct {
	now, nextDue, nextDeadline int64
	leases                     []store.Lease
	deadline                   int64 // of the leases
	dueSoon                    int64 // pending messages left due by the horizon (Claim)
	paused                     bool  // the shard is paused (Claim)
	// first counts the leases of a Claim's call that are not held, the
	// first ones (see claimScript); the others are held.
	first int
	// read counts the expired leases a call of Expired read, and full is
	// set if it read as many as asked: the shard may have more.
	read int
	full bool
	// n counts the items of the call (leases, or leases ended) and bytes
	// their payload bytes, for the limits of rounds.
	n     int
	bytes int64
}

// Claim implements store.Store. A p.Limit above MaxClaim is cut to it, and
// the leases are rounded up to the microsecond. A Claim also stops at
// about 4 MiB of payloads, leasing the message that would take it over
// only if it is the first, so that no script holds Redis long (see the
// package documentation). With shards, Claim takes from every shard,
// starting with a different one each call, and merges; see WithShards. If
// a shard fails but others leased messages, Claim returns those, with
// NextDue and NextDeadline at Now, so that the caller comes back soon; if
// no shard leased any, it returns the error.
//
// With shards, the first p.Limit-p.Held leases, those not held (handed
// out if due, on p.Lease), are shared among the shards in proportion to
// what each is asked for in the first round, and what is left goes to
// the later rounds, to shards that made no held lease yet. A message due
// by now is handed out by any shard's call, beyond its share too: a shard
// whose share was not all due makes the rest of its share, claimed ahead,
// on the full lease, and may so make more than Limit-Held such leases in
// all (store.ShardedOrder allows it). The leases of several shards
// come by due time; with a p.HeldLease other than p.Lease, those not
// held first, then the held ones, each by due time, and the first
// p.Limit-p.Held leases it returns have the lease p.Lease, as the
// contract says: when a shard had fewer messages than its share of them
// while another made held leases, Claim moves the deadlines of as many of
// those held leases (the earliest) to Ready+p.Lease, with one more script
// call on each of their shards (firstLeaseScript), after the claim's. A
// lease whose call fails keeps its p.HeldLease, and comes after the
// others.
func (s *Store) Claim(ctx context.Context, p store.ClaimParams) (store.Claimed, error) {
	if s.closed.Load() {
		return store.Claimed{}, store.ErrClosed
	}
	limit := max(0, min(p.Limit, MaxClaim))
	first := min(max(0, p.Limit-max(p.Held, 0)), limit)
	us, heldUS, aheadUS := micros(p.Lease), micros(p.HeldLease), micros(max(p.Ahead, 0))
	share := firstShares{total: first, held: make([]bool, len(s.shards))}
	rs, failed, err := s.rounds(limit, maxReadBytes, func(sh, n int, bytes int64, rank int) (result, error) {
		r, err := s.claimShard(ctx, sh, n, share.next(sh, n, rank), us, heldUS, aheadUS, bytes)
		share.count(sh, r)
		return r, err
	}, func(r result) bool {
		return r.nextDue >= 0 && r.nextDue <= r.now+aheadUS
	})
	if err != nil {
		return store.Claimed{}, wrap("claim", err)
	}
	m := s.merge(rs, failed)
	c := store.Claimed{Now: instant(m.now), NextDue: instant(m.nextDue), NextDeadline: instant(m.nextDeadline),
		DueSoon: int(min(m.dueSoon, MaxClaim))}
	for _, r := range rs {
		c.Paused = c.Paused || r.paused
	}
	c.Leases = s.claimOrder(ctx, rs, first, us, heldUS)
	return c, nil
}

// claimOrder returns the leases of the claim calls rs, whose first
// leases (not held, at most first in all) last us (µs) after their Ready
// and the others, held, heldUS: those of one call as it made it; those
// of several by due time, each shard's order kept, and if heldUS is not
// us, min(first, all the leases) leases not held first, moving some held
// ones if the calls made fewer (see Claim).
func (s *Store) claimOrder(ctx context.Context, rs []shardResult, first int, us, heldUS int64) []store.Lease {
	if len(rs) == 1 {
		return rs[0].leases
	}
	var leases []store.Lease
	if heldUS <= 0 || heldUS == us {
		for _, r := range rs {
			leases = append(leases, r.leases...)
		}
		sortLeases(leases)
		return leases
	}
	var held []shardLease
	for _, r := range rs {
		leases = append(leases, r.leases[:r.first]...)
		for _, l := range r.leases[r.first:] {
			held = append(held, shardLease{Lease: l, shard: r.shard})
		}
	}
	slices.SortStableFunc(held, func(a, b shardLease) int { return a.Due.Compare(b.Due) })
	// The earliest held leases of each shard, as many as the first ones
	// are short of, become first ones.
	if short := min(first, len(leases)+len(held)) - len(leases); short > 0 {
		moved := s.firstLease(ctx, held[:short], us-heldUS)
		rest := held[:0:0]
		for i, l := range held {
			if i < short && moved[i] {
				leases = append(leases, l.Lease)
			} else {
				rest = append(rest, l)
			}
		}
		held = rest
	}
	sortLeases(leases)
	for _, l := range held {
		leases = append(leases, l.Lease)
	}
	return leases
}

// A shardLease is a lease with the shard that holds its message.
type shardLease struct {
	store.Lease
	shard int
}

// firstLease moves the deadline of the held leases ls by add µs, with one
// firstLeaseScript call for each of their shards, at once, and reports
// for each whether its shard's call succeeded: then its Deadline is the
// new one, unless the lease is lost. The leases of a shard whose call
// failed keep their Deadline.
func (s *Store) firstLease(ctx context.Context, ls []shardLease, add int64) []bool {
	byShard := make([][]int, len(s.shards)) // indexes in ls
	for i, l := range ls {
		byShard[l.shard] = append(byShard[l.shard], i)
	}
	done := make([]bool, len(ls))
	err := s.parallel(func(sh int) error {
		if len(byShard[sh]) == 0 {
			return nil
		}
		args := make([]any, 0, 1+3*len(byShard[sh]))
		args = append(args, len(byShard[sh]))
		for _, i := range byShard[sh] {
			args = append(args, ls[i].ID, tokenString(ls[i].Token), ls[i].Deadline.UnixMicro()+add)
		}
		r, err := s.run(ctx, firstLeaseScript, sh, args...)
		if err != nil {
			return err
		}
		moved, err := replyArray(r, len(byShard[sh]))
		if err != nil {
			return err
		}
		for j, i := range byShard[sh] {
			done[i] = true
			if moved[j] == int64(1) {
				ls[i].Deadline = ls[i].Deadline.Add(time.Duration(add) * time.Microsecond)
			}
		}
		return nil
	})
	if err != nil {
		s.opts.logger.Warn("redisstore: a claim's held leases kept their short lease", "queue", s.queue, "err", err)
	}
	return done
}

// Shard implements store.ShardedOrder: the shard of id (see WithShards).
// With shards, the order of Claim, Expired and List holds within a shard,
// and a message claimed ahead beyond a Claim's first Limit-Held may have
// the full lease (see store.ShardedOrder). With one shard, every ID
// is in shard 0, and the orders are the full ones.
func (s *Store) Shard(id string) int { return shardOf(id, len(s.shards)) }

// firstShares splits the first leases of a Claim, those not held (at
// most p.Limit-p.Held), among its script calls. In the first round, one
// call a shard at once, each gets its share of total as rounds shares
// the limit, by its rank in the round's rotation: total/N, and one more
// for the first total%N (never more than the n it asks for, which the
// limit's share makes at least as large). A later call, one at a time,
// gets what the calls before did not take, unless its shard made held
// leases already: then none, so that each shard's leases are its first
// ones, then its held ones.
type firstShares struct {
	mu    sync.Mutex
	total int
	given int    // the first leases the calls made
	held  []bool // the shard made held leases
}

// next is how many of its leases the call asking shard sh for n, of rank
// rank in the first round (-1 in a later one), makes first ones.
func (f *firstShares) next(sh, n, rank int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if rank >= 0 {
		share := f.total / len(f.held)
		if rank < f.total%len(f.held) {
			share++
		}
		return min(n, share)
	}
	if f.held[sh] {
		return 0
	}
	return min(n, max(0, f.total-f.given))
}

// count adds what the call on shard sh made.
func (f *firstShares) count(sh int, r result) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.given += r.first
	if len(r.leases) > r.first {
		f.held[sh] = true
	}
}

// readyTime is the Ready of a lease whose message's due score and
// nanoseconds are score and ns, and whose ready time claimScript gave as
// ready (microseconds): the exact due time if the script took it, and
// otherwise the script's now.
func readyTime(score, ns, ready int64) time.Time {
	if ready == score {
		return dueTime(score, ns)
	}
	return time.UnixMicro(ready)
}

// claimFields is the number of elements of each lease in claimScript's
// reply.
const claimFields = 11

// claimShard is one claimScript call on shard sh: up to limit leases,
// the first first of them on lease µs, the others held on heldLease µs.
func (s *Store) claimShard(ctx context.Context, sh, limit, first int, lease, heldLease, ahead, bytes int64) (result, error) {
	r, err := s.run(ctx, claimScript, sh, limit, lease, max(bytes, 1), ahead, first, heldLease)
	if err != nil {
		return result{}, err
	}
	a, err := replyArray(r, 7)
	if err != nil {
		return result{}, err
	}
	n, err := replyInts(append(a[:4:4], a[5], a[6]))
	if err != nil {
		return result{}, err
	}
	res := result{now: n[0], deadline: n[1], nextDue: n[2], nextDeadline: n[3], dueSoon: n[4], paused: n[5] == 1}
	ls, err := replyArray(a[4], -1)
	if err != nil {
		return result{}, err
	}
	if len(ls)%claimFields != 0 {
		return result{}, fmt.Errorf("redisstore: claim: unexpected reply of %d elements", len(ls))
	}
	res.leases = make([]store.Lease, 0, len(ls)/claimFields)
	for i := 0; i < len(ls); i += claimFields {
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
		tail, err := replyInts(ls[i+7 : i+10]) // state a, ready, deadline
		if err != nil {
			return result{}, err
		}
		lastErr, err := replyBytes(ls[i+6])
		if err != nil {
			return result{}, err
		}
		f, err := replyFields(ls[i+10])
		if err != nil {
			return result{}, err
		}
		res.leases = append(res.leases, store.Lease{
			Message: store.Message{ID: id, Kind: f.kind, Payload: body, Due: dueTime(nums[2], nums[3]),
				MaxAttempts: f.maxAttempts, Timeout: f.timeout},
			Attempt:   int(nums[0]),
			Token:     uint64(nums[1]),
			Deadline:  time.UnixMicro(tail[2]),
			Ready:     readyTime(nums[2], nums[3], tail[1]),
			Ahead:     tail[0] == 1, // claimed ahead: state a
			LastError: string(lastErr),
		})
		res.bytes += int64(len(body))
	}
	res.n = len(res.leases)
	// Due messages come first and are never held: the first ones are
	// those, or the first first if more.
	due := 0
	for due < res.n && !res.leases[due].Ahead {
		due++
	}
	res.first = max(min(first, res.n), due)
	return res, nil
}

// Expired implements store.Store. A limit above MaxReap is cut to it.
// It only reads: one script call per shard (see expiredScript), and with
// shards, as Claim, more rounds for what is missing; the leases of
// several shards are merged by deadline, each shard's order kept. A
// shard that fails is handled as in Claim.
func (s *Store) Expired(ctx context.Context, limit int) (store.ExpiredLeases, error) {
	if s.closed.Load() {
		return store.ExpiredLeases{}, store.ErrClosed
	}
	limit = max(0, min(limit, MaxReap))
	// A later round of a shard reads on after what its earlier ones read:
	// nothing changes in between, so the same leases would come again.
	read := make([]int, len(s.shards)) // per shard; the first round's calls each write their own
	rs, failed, err := s.rounds(limit, math.MaxInt64, func(sh, n int, _ int64, _ int) (result, error) {
		r, err := s.expiredShard(ctx, sh, n, read[sh])
		read[sh] += r.read
		return r, err
	}, func(r result) bool {
		return r.full
	})
	if err != nil {
		return store.ExpiredLeases{}, wrap("expired", err)
	}
	m := s.merge(rs, failed)
	out := store.ExpiredLeases{Now: instant(m.now), NextDue: instant(m.nextDue), NextDeadline: instant(m.nextDeadline)}
	for _, r := range rs {
		for _, l := range r.leases {
			out.Leases = append(out.Leases, store.ExpiredLease{ID: l.ID, Token: l.Token, Attempt: l.Attempt, Deadline: l.Deadline, Held: l.Ahead,
				MaxAttempts: l.MaxAttempts})
		}
	}
	if len(rs) > 1 {
		slices.SortStableFunc(out.Leases, func(a, b store.ExpiredLease) int { return a.Deadline.Compare(b.Deadline) })
	}
	return out, nil
}

// expiredFields is the number of elements of each lease in
// expiredScript's reply.
const expiredFields = 6

// expiredShard reads up to limit expired leases of shard sh. The leases
// of its result carry ID, Token, Attempt, Deadline, Ahead (held, not
// confirmed) and MaxAttempts only.
func (s *Store) expiredShard(ctx context.Context, sh, limit, skip int) (result, error) {
	r, err := s.run(ctx, expiredScript, sh, limit, skip)
	if err != nil {
		return result{}, err
	}
	a, err := replyArray(r, 5)
	if err != nil {
		return result{}, err
	}
	n, err := replyInts(append(a[:3:3], a[4]))
	if err != nil {
		return result{}, err
	}
	res := result{now: n[0], nextDue: n[1], nextDeadline: n[2], read: int(n[3])}
	// A call for no lease (a shard's share of a small limit) reads none,
	// and says whether the shard has any.
	res.full = res.read == limit && (limit > 0 || res.nextDeadline >= 0 && res.nextDeadline <= res.now)
	ls, err := replyArray(a[3], -1)
	if err != nil {
		return result{}, err
	}
	if len(ls)%expiredFields != 0 {
		return result{}, fmt.Errorf("redisstore: expired: unexpected reply of %d elements", len(ls))
	}
	for i := 0; i < len(ls); i += expiredFields {
		id, ok := ls[i].(string)
		if !ok {
			return result{}, fmt.Errorf("redisstore: expired: unexpected ID %T", ls[i])
		}
		nums, err := replyInts(ls[i+1 : i+5])
		if err != nil {
			return result{}, err
		}
		f, err := replyFields(ls[i+5])
		if err != nil {
			return result{}, err
		}
		res.leases = append(res.leases, store.Lease{Message: store.Message{ID: id, MaxAttempts: f.maxAttempts}, Attempt: int(nums[1]),
			Token: uint64(nums[2]), Deadline: time.UnixMicro(nums[0]), Ahead: nums[3] == 1})
	}
	res.n = len(res.leases)
	return res, nil
}

// A shardResult is a result with the shard it came from.
type shardResult struct {
	result
	shard int
}

// rounds runs call on the shards for up to limit items and about maxBytes
// payload bytes in all. With one shard it is one call. With several, the
// first round calls every shard at once, each for its share of limit (0
// for some if limit is below the shard count: the call still reports the
// shard's next due time and deadline) and of maxBytes: limit/n, and one
// more for the first limit%n in the round's rotation, each call's rank
// in it (0 to n-1; 0 for the one call of one shard, -1 for the calls
// after the first round); then, while items
// and bytes are missing, the shards whose result says more are ready
// (more) are called again, one after the other, for what is missing. A
// call takes at least one item whatever its bytes, so the bytes may go
// over maxBytes by about one item per shard. The results are in the order
// they came, the last of each shard after its others.
//
// A shard whose call fails is not called again, and its earlier results
// stay: their work is done in Redis. If no call did any work (no item),
// rounds returns the failures; otherwise it returns the results with
// failed true, for merge to tell the caller to come back soon.
func (s *Store) rounds(limit int, maxBytes int64, call func(sh, n int, bytes int64, rank int) (result, error), more func(result) bool) (rs []shardResult, failed bool, err error) {
	n := len(s.shards)
	if n == 1 {
		r, err := call(0, limit, maxBytes, 0)
		if err != nil {
			return nil, false, err
		}
		return []shardResult{{result: r}}, false, nil
	}
	start := int(s.rr.Add(1) % uint64(n))
	first := make([]result, n)
	firstErrs := make([]error, n)
	_ = s.parallel(func(sh int) error {
		rank := (sh - start + n) % n
		share := limit / n
		if rank < limit%n {
			share++
		}
		first[sh], firstErrs[sh] = call(sh, share, max(maxBytes/int64(n), 1), rank)
		return nil
	})
	var (
		errs  []error
		down  = make([]bool, n) // the shard failed
		last  = make([]int, n)  // index in rs of the last result of each shard
		got   int
		bytes int64
	)
	add := func(sh int, r result) {
		last[sh] = len(rs)
		rs = append(rs, shardResult{result: r, shard: sh})
		got += r.n
		bytes += r.bytes
	}
	for i := range n {
		sh := (start + i) % n
		if firstErrs[sh] != nil {
			down[sh] = true
			errs = append(errs, firstErrs[sh])
			continue
		}
		add(sh, first[sh])
	}
	for progress := true; progress && got < limit && bytes < maxBytes; {
		progress = false
		for i := 0; i < n && got < limit && bytes < maxBytes; i++ {
			sh := (start + i) % n
			if down[sh] || !more(rs[last[sh]].result) {
				continue
			}
			r, err := call(sh, limit-got, maxBytes-bytes, -1)
			if err != nil {
				down[sh] = true
				errs = append(errs, err)
				continue
			}
			add(sh, r)
			progress = progress || r.n > 0
		}
	}
	if len(errs) == 0 {
		return rs, false, nil
	}
	if got == 0 {
		return nil, true, errors.Join(errs...)
	}
	s.opts.logger.Warn("redisstore: a shard failed; returning the others' results", "queue", s.queue, "err", errors.Join(errs...))
	return rs, true, nil
}

// merge returns the clock, next due time and next deadline of results
// from several shards: each shard's latest, the earliest of them. Now is
// the latest reading, at or after every shard's claim. On a single Redis
// all shards share one clock. On a cluster each node has its own clock:
// the hints are moved to the clock of the first result, by their distance
// from their own result's now, which can only make them earlier than
// Now says (a hint may be early, never late); the leases' Ready and
// Deadline stay as their shard keeps them, so that a Ready is never
// before its due time nor a Deadline other than Get's. If a shard failed,
// the next due time and deadline are now: what the failed shard holds is
// unknown, and the caller should come back soon.
func (s *Store) merge(rs []shardResult, failed bool) result {
	if len(rs) == 1 {
		m := rs[0].result
		if failed {
			m.nextDue, m.nextDeadline = m.now, m.now
		}
		return m
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
			off = min(0, ref-r.now)
		}
		if r.now > m.now {
			m.now = r.now
		}
		if latest[r.shard] != i {
			continue
		}
		m.dueSoon += r.dueSoon
		if r.nextDue >= 0 && (m.nextDue < 0 || r.nextDue+off < m.nextDue) {
			m.nextDue = r.nextDue + off
		}
		if r.nextDeadline >= 0 && (m.nextDeadline < 0 || r.nextDeadline+off < m.nextDeadline) {
			m.nextDeadline = r.nextDeadline + off
		}
	}
	if failed {
		m.nextDue, m.nextDeadline = m.now, m.now
	}
	return m
}

// sortLeases orders leases from several shards by due time, keeping each
// shard's order among equal ones (a stable sort).
func sortLeases(ls []store.Lease) {
	slices.SortStableFunc(ls, func(a, b store.Lease) int { return a.Due.Compare(b.Due) })
}
