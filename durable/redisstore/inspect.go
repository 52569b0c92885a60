package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// Reading what the store holds: Get, List and Stats.

// maxListPage is the most messages one list script returns.
const maxListPage = 1000

// Get implements store.Store: one script call on the ID's shard, which
// only reads. Times are on the clock of the shard's node.
func (s *Store) Get(ctx context.Context, id string) (store.Info, error) {
	r, err := s.run(ctx, getScript, shardOf(id, len(s.shards)), id)
	if err != nil {
		return store.Info{}, wrap("get", err)
	}
	if r == int64(0) {
		return store.Info{}, fmt.Errorf("%w: %q", store.ErrNotFound, id)
	}
	a, err := replyArray(r, 1+itemFields)
	if err != nil {
		return store.Info{}, wrap("get", err)
	}
	letter, _ := a[0].(string)
	st := store.InFlight // f, or a: claimed ahead
	switch letter {
	case "p":
		st = store.Pending
	case "d":
		st = store.Dead
	}
	it, err := inspectItem(st, a[1:])
	if err != nil {
		return store.Info{}, wrap("get", err)
	}
	return it.info, nil
}

// An item is a message listed by a script: its Info, and its position in
// its state's sorted set.
type item struct {
	info   store.Info
	score  int64
	member string
}

// before reports whether it comes before o in a sorted set: by score,
// then bytewise by member, as Redis orders them.
func (it *item) before(o *item) bool {
	if it.score != o.score {
		return it.score < o.score
	}
	return it.member < o.member
}

// itemFields is the number of elements of a message in the replies of
// getScript (after its state letter) and listScript.
const itemFields = 7

// inspectItem reads the elements of a message in the reply of getScript
// or listScript: member, score, attempt, enqueued, payload, last error,
// fields.
func inspectItem(st store.State, a []any) (item, error) {
	if len(a) < itemFields {
		return item{}, fmt.Errorf("redisstore: unexpected item of %d elements", len(a))
	}
	member, ok := a[0].(string)
	if !ok {
		return item{}, fmt.Errorf("redisstore: unexpected member %T", a[0])
	}
	nums, err := replyInts(a[1:3])
	if err != nil {
		return item{}, err
	}
	enq, _ := a[3].(string)
	body, err := replyBytes(a[4])
	if err != nil {
		return item{}, err
	}
	lastErr, err := replyBytes(a[5])
	if err != nil {
		return item{}, err
	}
	f, err := replyFields(a[6])
	if err != nil {
		return item{}, err
	}
	it := item{score: nums[0], member: member}
	info := store.Info{ID: member, Kind: f.kind, Payload: body, MaxAttempts: f.maxAttempts, Timeout: f.timeout,
		State: st, Attempt: int(nums[1]), LastError: string(lastErr)}
	if st != store.InFlight { // members of pending and dead have a prefix
		if len(member) < memberPrefixLen {
			return item{}, fmt.Errorf("redisstore: unexpected member %q", member)
		}
		info.ID = member[memberPrefixLen:]
	}
	if enq != "" {
		us, err := strconv.ParseInt(enq, 10, 64)
		if err != nil {
			return item{}, fmt.Errorf("redisstore: unexpected enqueued time %q", enq)
		}
		info.EnqueuedAt = time.UnixMicro(us)
	}
	switch st {
	case store.Pending:
		ns, _ := strconv.ParseInt(member[:nsDigits], 10, 64)
		info.Due = dueTime(it.score, ns)
	case store.InFlight:
		info.Deadline = time.UnixMicro(it.score)
	case store.Dead:
		info.DiedAt = time.UnixMicro(it.score)
	}
	it.info = info
	return it, nil
}

// List implements store.Store. Each shard is read from the cursor by
// script calls of up to 1000 messages and about 4 MiB of payloads, each
// O(log N) plus what it returns, and which only read; the calls of a page
// are not atomic together. With shards, List reads up to limit messages
// from every shard and merges them in the order of their scores (the due
// time, deadline or time of death, each on its shard's node's clock),
// then of their members, which is one order over all the shards: the
// cursor is a position in it.
func (s *Store) List(ctx context.Context, p store.ListParams) ([]store.Info, string, error) {
	st, cursor, limit := p.State, p.Cursor, p.Limit
	if s.closed.Load() {
		return nil, "", store.ErrClosed
	}
	letter, ok := stateLetter(st)
	if !ok {
		return nil, "", fmt.Errorf("redisstore: List of an invalid state %v", st)
	}
	after, err := parseCursor(st, cursor)
	if err != nil {
		return nil, "", err
	}
	if limit < 1 {
		return nil, "", nil
	}
	lists := make([][]item, len(s.shards))
	ended := make([]bool, len(s.shards))
	err = s.parallel(func(sh int) error {
		pos := after
		for len(lists[sh]) < limit && !ended[sh] {
			items, end, err := s.listShard(ctx, sh, letter, st, pos, min(limit-len(lists[sh]), maxListPage))
			if err != nil {
				return err
			}
			lists[sh] = append(lists[sh], items...)
			ended[sh] = end || len(items) == 0
			if len(items) > 0 {
				pos = &items[len(items)-1]
			}
		}
		return nil
	})
	if err != nil {
		return nil, "", wrap("list", err)
	}
	out, last, more := mergeItems(lists, ended, limit)
	next := ""
	if more {
		next = formatCursor(st, last)
	}
	return out, next, nil
}

// mergeItems takes up to limit items from lists, each in order, in order.
// It returns them, the last taken, and whether any item is left (in
// lists, or in a shard that has not ended).
func mergeItems(lists [][]item, ended []bool, limit int) ([]store.Info, *item, bool) {
	var out []store.Info
	var last *item
	for len(out) < limit {
		best := -1
		for sh, l := range lists {
			if len(l) > 0 && (best < 0 || l[0].before(&lists[best][0])) {
				best = sh
			}
		}
		if best < 0 {
			break
		}
		last = &lists[best][0]
		out = append(out, last.info)
		lists[best] = lists[best][1:]
	}
	for sh, l := range lists {
		if len(l) > 0 || !ended[sh] {
			return out, last, last != nil
		}
	}
	return out, last, false
}

// listShard is one list script call on shard sh.
func (s *Store) listShard(ctx context.Context, sh int, letter string, st store.State, after *item, n int) ([]item, bool, error) {
	score, member := "", ""
	if after != nil {
		score, member = strconv.FormatInt(after.score, 10), after.member
	}
	r, err := s.run(ctx, listScript, sh, letter, score, member, n, maxReadBytes)
	if err != nil {
		return nil, false, err
	}
	reply, err := replyArray(r, 2)
	if err != nil {
		return nil, false, err
	}
	end, err := replyInt(reply[0])
	if err != nil {
		return nil, false, err
	}
	a, err := replyArray(reply[1], -1)
	if err != nil {
		return nil, false, err
	}
	items := make([]item, 0, len(a)/itemFields)
	for i := 0; i+itemFields <= len(a); i += itemFields {
		it, err := inspectItem(st, a[i:i+itemFields])
		if err != nil {
			return nil, false, err
		}
		items = append(items, it)
	}
	return items, end == 1, nil
}

func stateLetter(st store.State) (string, bool) {
	switch st {
	case store.Pending:
		return "p", true
	case store.InFlight:
		return "f", true
	case store.Dead:
		return "d", true
	}
	return "", false
}

// A cursor is a store.Cursor: its At is the score of the last message
// listed, in microseconds, and its Key that message's member.
func formatCursor(st store.State, it *item) string {
	return store.Cursor{State: st, At: time.UnixMicro(it.score), Key: it.member}.String()
}

// parseCursor returns the position of a cursor of state st: nil for "".
func parseCursor(st store.State, cursor string) (*item, error) {
	if cursor == "" {
		return nil, nil
	}
	c, err := store.ParseCursor(st, cursor)
	if err != nil {
		return nil, err
	}
	if c.Key == "" || c.Seq != 0 {
		return nil, fmt.Errorf("%w: %q is not a cursor of %v messages", store.ErrInvalidCursor, cursor, st)
	}
	return &item{score: c.At.UnixMicro(), member: c.Key}, nil
}

// Stats implements store.Store. With shards, it sums their counts, and
// NextDue is the earliest of theirs, each on its node's clock.
func (s *Store) Stats(ctx context.Context) (store.Stats, error) {
	var st store.Stats
	var mu sync.Mutex
	next := int64(-1)
	err := s.parallel(func(sh int) error {
		r, err := s.run(ctx, statsScript, sh)
		if err != nil {
			return err
		}
		a, err := replyArray(r, 5)
		if err != nil {
			return err
		}
		n, err := replyInts(a)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		st.Paused = st.Paused || n[4] == 1
		st.Pending += int(n[0])
		st.InFlight += int(n[1])
		st.Dead += int(n[2])
		if n[3] >= 0 && (next < 0 || n[3] < next) {
			next = n[3]
		}
		return nil
	})
	if err != nil {
		return store.Stats{}, wrap("stats", err)
	}
	st.NextDue = instant(next)
	return st, nil
}
