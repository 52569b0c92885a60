package timingwheel

import (
	"math"
	"sync"
	"sync/atomic"
	"unsafe"
)

// count returns the number of timers linked in b.
func (b *bucket) count() int {
	n := 0
	for i := range b.lanes {
		l := &b.lanes[i]
		l.mu.Lock()
		n += l.n
		l.mu.Unlock()
	}
	return n
}

// noExpiration marks a bucket that is not armed in the delay queue.
const noExpiration = math.MaxInt64

// A bucket holds the timers of one slot of one wheel level.
//
// Its timers are spread over a few lanes, each an intrusive doubly-linked
// list under its own mutex, so that goroutines scheduling timers for the
// same moment do not all queue on one lock. The lanes share one expiration:
// the tick at which the driver must flush the bucket.
type bucket struct {
	// exp is the tick at which the bucket is due, or noExpiration. Adders
	// lower it after linking a timer; the driver swaps it back to
	// noExpiration before it drains the lanes (see arm and flush).
	exp   atomic.Int64
	lanes []lane
	// coarse is true for the buckets of overflow levels, whose flush
	// cascades timers down rather than firing them.
	coarse bool
}

// A lane is one intrusive list of a bucket. Its fields are guarded by mu.
type lane struct {
	mu         sync.Mutex
	head, tail *Timer
	n          int // timers linked
	_          [64 - 8 - 16 - 8]byte
}

// newBuckets returns n buckets with k lanes each, backed by one allocation.
func newBuckets(n, k int, coarse bool) []bucket {
	buckets := make([]bucket, n)
	lanes := make([]lane, n*k)
	for i := range buckets {
		buckets[i].coarse = coarse
		buckets[i].exp.Store(noExpiration)
		buckets[i].lanes = lanes[i*k : (i+1)*k : (i+1)*k]
	}
	return buckets
}

// laneFor returns the lane for t, chosen by the memory span t was
// allocated from. Each P allocates from spans of its own, so the timers a
// goroutine makes in a row share a lane that stays in its core's cache,
// while goroutines on other Ps mostly use other lanes. It costs no random
// number and no shared counter.
func (b *bucket) laneFor(t *Timer) *lane {
	span := uint64(uintptr(unsafe.Pointer(t))) >> 13
	return &b.lanes[(span*0x9E3779B97F4A7C15)>>40&uint64(len(b.lanes)-1)]
}

// arm makes sure the bucket is due no later than exp, pushing it into the
// delay queue when its expiration moves earlier. It must be called after
// the timer that needs exp has been linked: the driver resets exp before it
// drains the lanes, so either the drain sees the timer or arm sees the reset.
func (b *bucket) arm(exp int64, q *delayQueue) {
	for {
		cur := b.exp.Load()
		if cur <= exp {
			return
		}
		if b.exp.CompareAndSwap(cur, exp) {
			q.push(exp, b)
			return
		}
	}
}

// pushBack links t at the tail of l. l.mu must be held.
func (l *lane) pushBack(t *Timer) {
	t.prev = l.tail
	t.next = nil
	if l.tail != nil {
		l.tail.next = t
	} else {
		l.head = t
	}
	l.tail = t
	l.n++
	t.lane = l
}

// remove unlinks t from l. l.mu must be held and t must be linked in l.
func (l *lane) remove(t *Timer) {
	if t.prev != nil {
		t.prev.next = t.next
	} else {
		l.head = t.next
	}
	if t.next != nil {
		t.next.prev = t.prev
	} else {
		l.tail = t.prev
	}
	t.next, t.prev = nil, nil
	l.n--
	t.lane = nil
}
