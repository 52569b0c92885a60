package timingwheel

import (
	"math"
	"sync"
	"sync/atomic"
	"unsafe"
)

// noExpiration marks a bucket that is not armed in the delay queue.
const noExpiration = math.MaxInt64

// A bucket holds the timers of one slot of one wheel level.
//
// Its timers are spread over a few lanes, each a slice of timers under its
// own mutex, so that goroutines scheduling timers for the same moment do
// not all queue on one lock. The lanes share one expiration: the instant
// at which the driver must flush the bucket.
type bucket struct {
	// exp is the instant (ns since start) at which the bucket is due, or
	// noExpiration: for a level-0 bucket the grain of its earliest timer,
	// for a coarse one the start of its cascade (see placeFor). Adders
	// lower it after linking a timer; the driver swaps it back to
	// noExpiration before it drains the lanes (see arm and flush).
	exp   atomic.Int64
	lanes []lane
	// coarse is true for the buckets of overflow levels, whose flush
	// cascades timers down rather than firing them.
	coarse bool
}

// A lane holds timers in a slice; each timer knows its position, so
// adding and removing one are O(1): removal moves another timer into the
// hole. A slice rather than an intrusive list keeps the Timer at 48 bytes
// with three pointers, which is what the garbage collector pays for per
// pending timer, and frees Stop from touching two neighbours.
//
// While the driver flushes the lane, items[:limit] are the timers it has
// yet to look at, and timers added meanwhile stay after them, so the flush
// never takes a timer it has just put back. Outside a flush limit is 0.
// flushing is set for the whole flush, which shrinks the lane once at its
// end rather than at each removal.
//
// Its fields are guarded by mu.
type lane struct {
	mu       sync.Mutex
	items    []*Timer
	limit    int32
	id       uint32 // see laneID
	flushing bool
	// pending is this lane's share of the wheel's pending count (see
	// TimingWheel.Len): +1 for each timer an owner made pending in the
	// lane, -1 for each that a Stop or Reset took out of it. The driver's
	// moves between lanes leave it alone, so the sum over all lanes stays
	// exact while timers cascade; it is not the lane's length. It wraps
	// after 2^31 timers fired through the lane (see Len).
	pending int32
	// inline is where items points while the lane holds at most two
	// timers: in the lane's own cache line, where cores using other lanes
	// never write (two small slices allocated apart could share a line).
	inline [2]*Timer // with them the lane fills one 64-byte cache line
}

// A lane ID names a lane in a timer's state word in 31 bits (see state.go):
// bits 0-5 the lane, 6-21 the bucket, 22-29 the level plus one (0 for the
// due bucket), and bit 30 set, so that 0 means "in no lane".
const (
	laneIDLinked   = 1 << 30
	maxLanes       = 64
	maxWheelSize   = 1 << 16
	laneIDLaneBits = 6
	laneIDSlotBits = 16
)

func laneID(levelCode, bucket, lane int) uint32 {
	return laneIDLinked | uint32(levelCode)<<(laneIDLaneBits+laneIDSlotBits) | uint32(bucket)<<laneIDLaneBits | uint32(lane)
}

// splitLaneID returns the level code, bucket and lane that id names.
func splitLaneID(id uint32) (levelCode, bucket, lane uint32) {
	levelCode = id >> (laneIDLaneBits + laneIDSlotBits) & 255
	bucket = id >> laneIDLaneBits & (maxWheelSize - 1)
	lane = id & (maxLanes - 1)
	return levelCode, bucket, lane
}

// laneByID returns the lane named by id, which is not 0.
func (w *TimingWheel) laneByID(id uint32) *lane {
	code, slot, k := splitLaneID(id)
	if code == 0 {
		return &w.due.lanes[k]
	}
	return &w.levels[code-1].Load().buckets[slot].lanes[k]
}

// newBuckets returns n buckets with k lanes each, backed by one
// allocation, for the level whose code is levelCode (see laneID).
func newBuckets(n, k int, levelCode int) []bucket {
	buckets := make([]bucket, n)
	lanes := make([]lane, n*k)
	for i := range buckets {
		buckets[i].coarse = levelCode > 1
		buckets[i].exp.Store(noExpiration)
		buckets[i].lanes = lanes[i*k : (i+1)*k : (i+1)*k]
		for j := range buckets[i].lanes {
			l := &buckets[i].lanes[j]
			l.id = laneID(levelCode, i, j)
			l.items = l.inline[:0]
		}
	}
	return buckets
}

// pendingCount returns the sum of the pending counts of b's lanes.
func (b *bucket) pendingCount() int64 {
	var n int64
	for i := range b.lanes {
		l := &b.lanes[i]
		l.mu.Lock()
		n += int64(l.pending)
		l.mu.Unlock()
	}
	return n
}

// laneFor returns the lane for t, chosen by the memory span t was
// allocated from. Each P allocates from spans of its own, so the timers a
// goroutine makes in a row share a lane that stays in its core's cache,
// while goroutines on other Ps mostly use other lanes. It costs no random
// number and no shared counter.
func (b *bucket) laneFor(t *Timer) *lane {
	return &b.lanes[b.laneIndex(t)]
}

func (b *bucket) laneIndex(t *Timer) uint64 {
	span := uint64(uintptr(unsafe.Pointer(t))) >> 13
	return (span * 0x9E3779B97F4A7C15) >> 40 & uint64(len(b.lanes)-1)
}

// lockLaneFor locks and returns a lane of b for t: the one laneFor picks,
// or, if another goroutine holds it, the next free one. A timer records
// the lane it is put in, so any lane will do; two goroutines whose spans
// map to the same lane then go on without waiting for each other.
func (b *bucket) lockLaneFor(t *Timer) *lane {
	n := uint64(len(b.lanes))
	i := b.laneIndex(t)
	for k := range n {
		if l := &b.lanes[(i+k)&(n-1)]; l.mu.TryLock() {
			return l
		}
	}
	l := &b.lanes[i]
	l.mu.Lock()
	return l
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

// minLaneCap is the capacity a lane keeps when it shrinks, and the least
// of the spare arrays the driver reuses (see TimingWheel.spares).
const minLaneCap = 64

// push adds t to l. l.mu must be held.
func (l *lane) push(t *Timer) { l.pushInto(t, nil) }

// pushInto adds t to l, moving l's timers into spare, an empty array, if
// l is full and spare has more room; it reports whether it did. The driver
// offers the arrays of lanes it emptied, so that lanes that fill and empty
// on every rotation do not allocate each time. l.mu must be held.
func (l *lane) pushInto(t *Timer, spare []*Timer) (usedSpare bool) {
	if n := len(l.items); n == cap(l.items) {
		// No other slice has the inline slots' small capacity.
		onInline := n == len(l.inline)
		switch {
		case cap(spare) > n:
			l.items = append(spare[:0], l.items...)
			usedSpare = true
		case onInline:
			l.items = append(make([]*Timer, 0, 4*len(l.inline)), l.items...)
		}
		if onInline {
			clear(l.inline[:]) // so that they keep no timer alive
		}
	}
	t.pos = uint32(len(l.items))
	l.items = append(l.items, t)
	return usedSpare
}

// remove takes t out of l. l.mu must be held and t must be in l.
func (l *lane) remove(t *Timer) {
	i, last := int(t.pos), len(l.items)-1
	if i < int(l.limit) {
		// Keep the timers the flush has yet to see in front: the last
		// of them fills the hole, and the last timer fills its place.
		l.limit--
		l.move(int(l.limit), i)
		l.move(last, int(l.limit))
	} else {
		l.move(last, i)
	}
	l.items[last] = nil
	l.items = l.items[:last]
	if !l.flushing {
		l.shrink()
	}
}

// shrink gives memory back once the lane has mostly emptied, and all of it
// once it is empty; it returns the array it let go of when it emptied. A
// flush calls it once at its end rather than at each removal, so that
// draining a large lane does not copy it again and again. l.mu must be
// held.
func (l *lane) shrink() (released []*Timer) {
	switch c := cap(l.items); {
	case len(l.items) == 0 && c > len(l.inline):
		released = l.items
		l.items = l.inline[:0]
	case c > minLaneCap && len(l.items) < c/4:
		l.items = append(make([]*Timer, 0, max(minLaneCap, 2*len(l.items))), l.items...)
	}
	return released
}

// move puts the timer at index from at index to.
func (l *lane) move(from, to int) {
	if from != to {
		m := l.items[from]
		l.items[to] = m
		m.pos = uint32(to)
	}
}
