package queue

import (
	"hash/maphash"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/seed64e23a5c/timingwheel"
)

// The non-generic part of a Queue: the index by key, the ready heap, the
// waiting takers and the glue to the wheel. Keeping it free of the type
// parameter keeps the timer callback a plain closure of two pointers (a
// closure made in generic code also carries its dictionary) and lets all
// Queue[T] instantiations share this code.

// A node's idx is its position in the ready heap, or one of these.
const (
	idxPending int32 = -1 // held, waiting for its timer
	idxFree    int32 = -2 // not held: taken, removed, closed, or recycled
)

// node is one held item, less its value (see entry). It is guarded by the
// core's mutex. A node is an item's identity: an upsert changes its due
// time, sequence and value in place, and its timer is reused for its whole
// life, including after it is recycled for another key.
type node struct {
	key   string
	due   int64  // ns since core.base on the queue's clock
	seq   uint64 // offer sequence of the current version, for ties
	timer *timingwheel.Timer
	next  *node  // hash chain
	hash  uint32 // of key
	idx   int32  // ready heap position, idxPending or idxFree
}

// core holds a queue's state. Its fields are guarded by mu, except the
// fired buffer and the ones set by New and never changed (clock,
// realClock, base, seed, ownWheel). Take the lock with lock and release it
// with unlock, which settle the fired buffer.
type core struct {
	mu      sync.Mutex
	nfired  atomic.Int64 // len(fired), read without fmu
	fmu     sync.Mutex   // guards fired; taken under mu or alone
	fired   []*node      // nodes whose timers fired, to settle under mu
	spare   []*node      // the other fired buffer, guarded by mu
	index   index
	ready   []*node // min-heap by (due, seq)
	waiters waiterList
	seq     uint64
	closed  bool
	wheel   *timingwheel.TimingWheel // nil once closed

	clock     clock.Clock
	realClock bool
	base      time.Time
	ownWheel  bool
}

// now returns the queue's clock in ns since base.
func (c *core) now() int64 {
	if c.realClock {
		return int64(time.Since(c.base))
	}
	return int64(c.clock.Since(c.base))
}

// timeOf converts ns since base to a time on the queue's clock.
func (c *core) timeOf(ns int64) time.Time { return c.base.Add(time.Duration(ns)) }

// nsOf converts a time to ns since base, saturating.
func (c *core) nsOf(t time.Time) int64 { return int64(t.Sub(c.base)) }

// after returns now+d, saturating.
func after(now int64, d time.Duration) int64 {
	switch {
	case d > 0 && now > math.MaxInt64-int64(d):
		return math.MaxInt64
	case d < 0 && now < math.MinInt64-int64(d):
		return math.MinInt64
	}
	return now + int64(d)
}

// schedule gives n, a held node, the due time due and sequence seq, and
// puts it where it belongs: the ready heap if due <= now, else pending on
// its timer. c.mu must be held.
func (c *core) schedule(n *node, due, now int64, seq uint64) {
	n.due, n.seq = due, seq
	if due <= now {
		if n.idx >= 0 {
			c.fixReady(int(n.idx))
			return
		}
		if n.timer != nil {
			// Keep a stale arming from holding the node; a fire already
			// under way finds it ready and does nothing.
			n.timer.Stop()
		}
		c.pushReady(n)
		return
	}
	if n.idx >= 0 {
		c.removeReady(int(n.idx))
	}
	n.idx = idxPending
	c.arm(n)
}

// arm makes n's timer fire at its due time, creating the timer on first
// use. It passes the due time as a deadline, so the wheel does not read
// the clock again. c.mu must be held.
func (c *core) arm(n *node) {
	deadline := c.timeOf(n.due)
	if n.timer == nil {
		n.timer = c.wheel.AfterFuncAt(deadline, func() { c.fire(n) })
		return
	}
	n.timer.ResetAt(deadline)
}

// rearm re-arms n's timer for the time left until its due time, measured
// on the queue's clock: used when a timer fired before the item was due
// on that clock, so that a wheel on another clock cannot make it spin.
// c.mu must be held.
func (c *core) rearm(n *node, now int64) {
	if n.timer == nil {
		c.arm(n)
		return
	}
	n.timer.Reset(time.Duration(n.due - now))
}

// fire is the task of n's timer. It never waits for the queue's lock, so
// that a busy queue does not hold up the wheel's driver (and with it every
// other queue on a shared wheel): it appends n to the fired buffer, and
// settles the buffer itself only if the lock is free. Otherwise the
// holder settles it, in unlock. Whoever takes the lock settles the buffer
// first, so every operation sees the items whose timers fired before it
// began.
func (c *core) fire(n *node) {
	c.fmu.Lock()
	c.fired = append(c.fired, n)
	c.nfired.Store(int64(len(c.fired)))
	c.fmu.Unlock()
	if c.mu.TryLock() {
		c.settleFired()
		c.unlock()
	}
}

// lock takes the queue's lock and settles the fired buffer.
func (c *core) lock() {
	c.mu.Lock()
	if c.nfired.Load() > 0 {
		c.settleFired()
	}
}

// unlock releases the queue's lock. A fire that found the lock taken left
// its node in the buffer before this Unlock, or after it and then found
// the lock free: either way someone settles it.
func (c *core) unlock() {
	c.mu.Unlock()
	for c.nfired.Load() > 0 && c.mu.TryLock() {
		c.settleFired()
		c.mu.Unlock()
	}
}

// settleFired moves the fired nodes that are due to the ready heap. c.mu
// must be held.
//
// A fire can be stale: the timer fired, and before its node was settled
// an Offer moved the node's due time (re-arming the timer), a Remove or
// Take released the node, or the node was even recycled for another key.
// Rather than tracking armings, settleFired acts on each node as it is
// now: only a pending node whose current due time has passed on the
// queue's clock becomes ready. A pending node not yet due is re-armed for
// its remaining time, which changes nothing if its timer is already armed
// for it (the usual case of a stale fire) and keeps an item from being
// stranded if the wheel's clock ran ahead of the queue's. So no fire
// delivers early, and no old version can be delivered since a node only
// ever holds its current version.
func (c *core) settleFired() {
	c.fmu.Lock()
	fired := c.fired
	c.fired, c.spare = c.spare, nil
	c.nfired.Store(0)
	c.fmu.Unlock()
	now := c.now()
	for i, n := range fired {
		fired[i] = nil
		if n.idx != idxPending || c.closed {
			continue
		}
		if n.due <= now {
			c.pushReady(n)
		} else {
			c.rearm(n, now)
		}
	}
	if cap(fired) <= keepSlots {
		c.spare = fired[:0]
	}
}

// release takes a held node out of the queue: out of the ready heap or off
// its timer, and out of the index. c.mu must be held.
func (c *core) release(n *node) {
	if n.idx >= 0 {
		c.removeReady(int(n.idx))
	} else if n.timer != nil {
		n.timer.Stop()
	}
	n.idx = idxFree
	c.index.remove(n)
}

// popReady removes and returns the earliest ready node, or nil. It
// re-checks the due time against the queue's clock: a node that is not due
// after all (the clock was set back, or the wheel's clock differs) goes
// back to pending. c.mu must be held.
func (c *core) popReady() *node {
	if len(c.ready) == 0 {
		return nil
	}
	now := c.now()
	for len(c.ready) > 0 {
		n := c.ready[0]
		c.removeReady(0)
		if n.due <= now {
			return n
		}
		n.idx = idxPending
		c.rearm(n, now)
	}
	return nil
}

// take pops the earliest ready node and takes it out of the index.
// c.mu must be held.
func (c *core) take() *node {
	n := c.popReady()
	if n == nil {
		return nil
	}
	n.idx = idxFree
	c.index.remove(n)
	return n
}

// The ready heap, ordered by (due, seq), with each node's idx kept.

func less(a, b *node) bool { return a.due < b.due || a.due == b.due && a.seq < b.seq }

// pushReady adds n to the ready heap and wakes a taker. c.mu must be held.
func (c *core) pushReady(n *node) {
	n.idx = int32(len(c.ready))
	c.ready = append(c.ready, n)
	c.up(len(c.ready) - 1)
	c.waiters.wakeOne()
}

func (c *core) fixReady(i int) {
	if !c.down(i) {
		c.up(i)
	}
}

// removeReady removes the node at i from the ready heap, leaving its idx
// for the caller to set.
func (c *core) removeReady(i int) {
	h := c.ready
	last := len(h) - 1
	if i != last {
		h[i] = h[last]
		h[i].idx = int32(i)
	}
	h[last] = nil
	c.ready = h[:last]
	if i != last {
		c.fixReady(i)
	}
	// Give memory back after a burst: a slice never shrinks by itself.
	if cap(c.ready) > keepSlots && len(c.ready) < cap(c.ready)/16 {
		c.ready = append(make([]*node, 0, max(keepSlots, 4*len(c.ready))), c.ready...)
	}
}

func (c *core) up(i int) {
	h := c.ready
	n := h[i]
	for i > 0 {
		p := (i - 1) / 2
		if !less(n, h[p]) {
			break
		}
		h[i] = h[p]
		h[i].idx = int32(i)
		i = p
	}
	h[i] = n
	n.idx = int32(i)
}

// down sifts the node at i down and reports whether it moved.
func (c *core) down(i int) bool {
	h := c.ready
	n := h[i]
	i0 := i
	for {
		l := 2*i + 1
		if l >= len(h) {
			break
		}
		m := l
		if r := l + 1; r < len(h) && less(h[r], h[l]) {
			m = r
		}
		if !less(h[m], n) {
			break
		}
		h[i] = h[m]
		h[i].idx = int32(i)
		i = m
	}
	h[i] = n
	n.idx = int32(i)
	return i > i0
}

// index is a chained hash table of nodes by key. Unlike a Go map it
// shrinks when it has emptied (a map never gives its buckets back), and
// it costs one pointer per bucket since the chain link and the hash live
// in the node.
type index struct {
	buckets []*node // a power of two of them, or none
	n       int
	seed    maphash.Seed
}

const minBuckets = 8

// Shrinking. The index, the ready heap and the fired buffer give their
// arrays back when they have emptied to a sixteenth of their size, so that
// a queue that held millions of items does not keep their arrays; they
// shrink to four times what they hold, so that a backlog that comes and
// goes does not make them grow and shrink over and over; and they keep up
// to keepSlots entries (64KB each at most), so that a queue with a steady
// backlog does not reallocate at all.
const keepSlots = 8192

func (x *index) hash(key string) uint32 {
	h := maphash.String(x.seed, key)
	return uint32(h ^ h>>32)
}

func (x *index) find(key string, h uint32) *node {
	if len(x.buckets) == 0 {
		return nil
	}
	for n := x.buckets[h&uint32(len(x.buckets)-1)]; n != nil; n = n.next {
		if n.hash == h && n.key == key {
			return n
		}
	}
	return nil
}

// insert adds n, whose key is not in x.
func (x *index) insert(n *node) {
	if x.n >= len(x.buckets) {
		x.resize(max(minBuckets, 2*len(x.buckets)))
	}
	b := &x.buckets[n.hash&uint32(len(x.buckets)-1)]
	n.next = *b
	*b = n
	x.n++
}

// remove unlinks n, which is in x.
func (x *index) remove(n *node) {
	p := &x.buckets[n.hash&uint32(len(x.buckets)-1)]
	for *p != n {
		p = &(*p).next
	}
	*p = n.next
	n.next = nil
	x.n--
	if len(x.buckets) > keepSlots && x.n < len(x.buckets)/16 {
		size := keepSlots
		for size < 4*x.n {
			size <<= 1
		}
		x.resize(size)
	}
}

func (x *index) resize(size int) {
	old := x.buckets
	x.buckets = make([]*node, size)
	mask := uint32(size - 1)
	for _, n := range old {
		for n != nil {
			next := n.next
			b := &x.buckets[n.hash&mask]
			n.next = *b
			*b = n
			n = next
		}
	}
}

// all returns every node in x.
func (x *index) all() []*node {
	nodes := make([]*node, 0, x.n)
	for _, n := range x.buckets {
		for ; n != nil; n = n.next {
			nodes = append(nodes, n)
		}
	}
	return nodes
}

// A waiter is a taker blocked in Take. Its channel has room for the one
// wake-up it can be sent while it is listed.
type waiter struct {
	ch         chan struct{}
	prev, next *waiter
	listed     bool
}

var waiterPool = sync.Pool{New: func() any { return &waiter{ch: make(chan struct{}, 1)} }}

// waiterList is a FIFO of blocked takers. Waking one at a time, rather
// than broadcasting, keeps a burst of takers from all waking for one item.
type waiterList struct {
	head, tail *waiter
}

func (l *waiterList) pushBack(w *waiter) {
	w.prev, w.next, w.listed = l.tail, nil, true
	if l.tail != nil {
		l.tail.next = w
	} else {
		l.head = w
	}
	l.tail = w
}

func (l *waiterList) remove(w *waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		l.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		l.tail = w.prev
	}
	w.prev, w.next, w.listed = nil, nil, false
}

// wakeOne unlists the longest-waiting taker and wakes it.
func (l *waiterList) wakeOne() bool {
	w := l.head
	if w == nil {
		return false
	}
	l.remove(w)
	w.ch <- struct{}{} // never blocks: one send per listing
	return true
}
