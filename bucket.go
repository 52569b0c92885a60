package timingwheel

import (
	"math"
	"sync"
	"sync/atomic"
	"unsafe"
)

// noExpiration marks a bucket that is not armed in the delay queue.
const noExpiration = math.MaxInt64

// A bucket holds the timers of one slot of one wheel level, spread over
// lanes, each a slice under its own mutex, so that goroutines scheduling
// timers for the same moment do not all queue on one lock.
type bucket struct {
	// exp, which the lanes share, is the instant (ns since start) at which
	// the driver must look at the bucket, or noExpiration (see arm).
	exp    atomic.Int64
	lanes  []lane
	coarse bool // of an overflow level, whose timers cascade rather than fire
}

// A lane holds timers in a slice, each timer knowing its index (pos), so
// adding and removing one are O(1): removal moves the last timer into the
// hole. A slice rather than an intrusive list keeps the Timer at 48 bytes
// with three pointers, which is what the garbage collector pays for per
// pending timer, and frees Stop from touching two neighbours. Its fields
// are guarded by mu.
type lane struct {
	mu    sync.Mutex
	items []*Timer
	id    uint32 // see laneID
	// pending is the lane's share of the wheel's pending count (see
	// TimingWheel.Len): +1 per timer made pending in it, -1 per timer
	// stopped or fired out of it. A cascade changes neither lane's count,
	// so the sum over all lanes stays exact while timers move. A lane's
	// count is not its length, and may wrap: a cascaded timer is taken off
	// a lane that never counted it.
	pending int32
	// inline backs items while the lane holds at most two timers, in the
	// lane's own cache line, where cores using other lanes never write.
	inline [2]*Timer
	_      [8]byte // to a 64-byte cache line
}

// A lane ID names a lane in a timer's state word in 31 bits: bits 0-5 the
// lane, 6-21 the bucket, 22-29 the level plus one (0 for the due bucket),
// and bit 30 set, so that no lane's ID is 0.
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
// the lane it is put in, so any lane will do.
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
// delay queue when its expiration moves earlier. It is called after the
// timer that needs exp has been linked: the driver resets exp before it
// looks at the lanes, so either it sees the timer or arm sees the reset.
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
// of the spare arrays the driver reuses.
const minLaneCap = 64

// push adds t to l, growing l into spare, an empty array, if l is full
// and spare has more room. l.mu must be held.
func (l *lane) push(t *Timer, spare []*Timer) {
	if n := len(l.items); n == cap(l.items) {
		onInline := n == len(l.inline) // no other slice has so small a capacity
		switch {
		case cap(spare) > n:
			l.items = append(spare[:0], l.items...)
		case onInline:
			l.items = append(make([]*Timer, 0, 4*len(l.inline)), l.items...)
		}
		if onInline {
			clear(l.inline[:]) // so that they keep no timer alive
		}
	}
	t.pos = uint32(len(l.items))
	l.items = append(l.items, t)
}

// remove takes t out of l and shrinks l if it has mostly emptied. l.mu
// must be held and t must be in l.
func (l *lane) remove(t *Timer) {
	l.removeAt(int(t.pos))
	l.shrink()
}

// removeAt takes the timer at index i out of l, moving the last timer
// into its place. The driver, which takes many timers out of a lane in a
// row, shrinks the lane once at the end. l.mu must be held.
func (l *lane) removeAt(i int) {
	last := len(l.items) - 1
	if i != last {
		m := l.items[last]
		l.items[i] = m
		m.pos = uint32(i)
	}
	l.items[last] = nil
	l.items = l.items[:last]
}

// shrink gives memory back once the lane has mostly emptied, and all of it
// once it is empty; it returns the array it let go of when it emptied.
// l.mu must be held.
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

// The spare arrays: the driver keeps the arrays of lanes it emptied, for
// the lanes it fills to grow into, so that lanes that fill and empty on
// every rotation do not allocate each time. They hold minLaneCap to
// maxSpareCap slots each, maxSpareSlots in all (128 KiB), and are let go
// when the driver has had nothing to do for spareLinger.
const (
	maxSpareCap   = 1024
	maxSpareSlots = 16384
)

type spares struct {
	arrays [][]*Timer
	slots  int // their total capacity
}

// keep keeps a, the emptied array of a lane (its slots are all nil), if it
// is of a size worth keeping and there is room.
func (sp *spares) keep(a []*Timer) {
	if c := cap(a); c >= minLaneCap && c <= maxSpareCap && sp.slots+c <= maxSpareSlots {
		sp.arrays = append(sp.arrays, a[:0])
		sp.slots += c
	}
}

// drop lets the spare arrays go.
func (sp *spares) drop() {
	clear(sp.arrays)
	sp.arrays, sp.slots = sp.arrays[:0], 0
}

// push adds t to l, growing l into the spare array that fits it best if l
// is full: the smallest with more room than l has timers and at most four
// times as much, so that a small lane never takes a large array. l.mu must
// be held.
func (sp *spares) push(l *lane, t *Timer) {
	best := -1
	if n := len(l.items); n == cap(l.items) {
		for i, a := range sp.arrays {
			if c := cap(a); c > n && c <= 4*n && (best < 0 || c < cap(sp.arrays[best])) {
				best = i
			}
		}
	}
	var a []*Timer
	if best >= 0 {
		a = sp.arrays[best]
		sp.slots -= cap(a)
		last := len(sp.arrays) - 1
		sp.arrays[best], sp.arrays[last] = sp.arrays[last], nil
		sp.arrays = sp.arrays[:last]
	}
	l.push(t, a)
}
