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
// the lease is rounded up to the microsecond. A Claim also stops at about
// 4 MiB of payloads, leasing the message that would take it over only if
// it is the first, so that no script holds Redis long (see the package
// documentation). With shards, Claim takes from every shard, starting with
// a different one each call, and merges; see WithShards. If a shard fails
// but others leased messages, Claim returns those, with NextDue and
// NextDeadline at Now, so that the caller comes back soon; if no shard
// leased any, it returns the error.
//
// With shards, the leases a Claim hands out (p.Limit-p.Held at most) are
// shared among the shards in proportion to what each is asked for in the
// first round, rounded down, and what is left goes to the later rounds:
// a Claim may hand out fewer than it could, never more.
func (s *Store) Claim(ctx context.Context, p store.ClaimParams) (store.Claimed, error) {
	if s.closed.Load() {
		return store.Claimed{}, store.ErrClosed
	}
	handOut := max(0, p.Limit-max(p.Held, 0))
	limit := max(0, min(p.Limit, MaxClaim))
	handOut = min(handOut, limit)
	us, aheadUS := micros(p.Lease), micros(max(p.Ahead, 0))
	share := handOutShares{total: handOut, limit: limit, called: make([]bool, len(s.shards))}
	rs, failed, err := s.rounds(limit, maxReadBytes, func(sh, n int, bytes int64) (result, error) {
		r, err := s.claimShard(ctx, sh, n, share.next(sh, n), us, aheadUS, bytes)
		share.count(r)
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
		c.Leases = append(c.Leases, r.leases...)
		c.Paused = c.Paused || r.paused
	}
	if len(rs) > 1 {
		sortLeases(c.Leases)
	}
	return c, nil
}

// Shard implements store.ShardedOrder: the shard of id (see WithShards).
// With shards, the order of Claim, Expired and List holds within a shard,
// and a Claim may hand out fewer than Limit-Held. With one shard, every ID
// is in shard 0, and the orders are the full ones.
func (s *Store) Shard(id string) int { return shardOf(id, len(s.shards)) }

// handOutShares splits the leases a Claim may hand out among its script
// calls, one per shard in a first round (run at once: each gets its
// share of total, in proportion to the n it asks for, rounded down), then
// one at a time (each may hand out what the calls before did not).
type handOutShares struct {
	mu           sync.Mutex
	total, limit int
	handed       int
	called       []bool // the shard's first call was made
}

// next is how many the call asking shard sh for n leases may hand out.
func (h *handOutShares) next(sh, n int) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.called[sh] {
		h.called[sh] = true
		if h.limit == 0 {
			return 0
		}
		return h.total * n / h.limit
	}
	return min(n, max(0, h.total-h.handed))
}

// count adds the leases r handed out.
func (h *handOutShares) count(r result) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, l := range r.leases {
		if !l.Ahead {
			h.handed++
		}
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

func (s *Store) claimShard(ctx context.Context, sh, limit, handOut int, lease, ahead, bytes int64) (result, error) {
	r, err := s.run(ctx, claimScript, sh, limit, lease, max(bytes, 1), ahead, handOut)
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
			Ahead:     tail[0] == 1, // claimed ahead or held: state a
			LastError: string(lastErr),
		})
		res.bytes += int64(len(body))
	}
	res.n = len(res.leases)
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
	rs, failed, err := s.rounds(limit, math.MaxInt64, func(sh, n int, _ int64) (result, error) {
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
			out.Leases = append(out.Leases, store.ExpiredLease{ID: l.ID, Token: l.Token, Attempt: l.Attempt, Deadline: l.Deadline, Held: l.Ahead})
		}
	}
	if len(rs) > 1 {
		slices.SortStableFunc(out.Leases, func(a, b store.ExpiredLease) int { return a.Deadline.Compare(b.Deadline) })
	}
	return out, nil
}

// expiredFields is the number of elements of each lease in
// expiredScript's reply.
const expiredFields = 5

// expiredShard reads up to limit expired leases of shard sh. The leases
// of its result carry ID, Token, Attempt, Deadline and Ahead (held, not
// confirmed) only.
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
		res.leases = append(res.leases, store.Lease{Message: store.Message{ID: id}, Attempt: int(nums[1]),
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
// shard's next due time and deadline) and of maxBytes; then, while items
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
func (s *Store) rounds(limit int, maxBytes int64, call func(sh, n int, bytes int64) (result, error), more func(result) bool) (rs []shardResult, failed bool, err error) {
	n := len(s.shards)
	if n == 1 {
		r, err := call(0, limit, maxBytes)
		if err != nil {
			return nil, false, err
		}
		return []shardResult{{result: r}}, false, nil
	}
	start := int(s.rr.Add(1) % uint64(n))
	first := make([]result, n)
	firstErrs := make([]error, n)
	_ = s.parallel(func(sh int) error {
		share := limit / n
		if (sh-start+n)%n < limit%n {
			share++
		}
		first[sh], firstErrs[sh] = call(sh, share, max(maxBytes/int64(n), 1))
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
			r, err := call(sh, limit-got, maxBytes-bytes)
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
