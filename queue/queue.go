// Package queue is a keyed delay queue built on a timing wheel: items are
// offered under a key with a due time, and takers receive each item once
// it is due, in due order.
//
// It is what Java's DelayQueue or a Redis sorted set polled by a Lua
// script are used for (order timeouts, retries, session expiry), with
// keys: offering a key that is already held moves its due time and
// replaces its value (an upsert), and removing a key cancels its item.
//
// Each pending item has one timer on a timingwheel.TimingWheel, so
// Offer and Remove cost O(1) whatever the number of items held, where a
// heap costs O(log n). When a timer fires its item moves to a small ready
// heap ordered by (due time, offer sequence), from which Take and TryTake
// serve. Items are never handed out before their due time on the queue's
// clock, and each is handed out once. Keys are non-empty strings.
//
// Order. Items that are ready come out in due order, and in offer order
// among equal due times. An item becomes ready when its timer fires: at
// its due time, or up to one tick of the wheel later (1ms by default). So
// a taker already waiting may receive an item before another one due less
// than a tick earlier whose timer has not fired yet; items that are all
// ready (say, after a pause of the takers) come out strictly in order.
//
// Memory. A pending item costs about 140 bytes besides its key and value:
// its wheel timer (64), its entry (56 plus the value) and the timer's
// callback (24), plus its share of the index. The index by key and the
// ready heap shrink as the queue empties, unlike a Go map, so a queue that
// held millions of items gives the memory back.
//
// A Queue runs its own wheel by default; many queues can share one with
// WithWheel. Close a queue when done with it: it stops its own wheel, or
// its timers on a shared one, and returns the items it still held.
package queue

import (
	"context"
	"errors"
	"hash/maphash"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/benbjohnson/clock"

	"github.com/seed64e23a5c/timingwheel"
)

var (
	// ErrClosed is returned by Offer, OfferAt and Take once the queue has
	// been closed.
	ErrClosed = errors.New("queue: closed")
	// ErrEmptyKey is returned by Offer and OfferAt for an empty key.
	ErrEmptyKey = errors.New("queue: empty key")
)

// Item is an item of a Queue: a value held under a key until it is due.
type Item[T any] struct {
	// Key identifies the item in the queue; it is never empty.
	Key string
	// Value is the value of the item's latest offer.
	Value T
	// Due is the time at which the item becomes due, on the queue's
	// clock. It is the instant given to OfferAt (compare with Equal),
	// expressed as a time of the queue's clock: with its location and,
	// for the real clock, a monotonic reading. Due times more than about
	// 292 years from the queue's creation are clamped.
	Due time.Time
}

// Queue is a keyed delay queue. Create one with New; the zero value is not
// usable. All methods are safe for concurrent use.
type Queue[T any] struct {
	c core
	// free recycles entries, with their timers, from Take and Remove to
	// Offer: churn then allocates nothing. The pool lets the GC reclaim
	// them, so a queue that emptied holds no more than a fresh one.
	free sync.Pool
}

// entry is a node with its value. The node comes first, so that a *node
// of a Queue[T] converts back to its *entry[T].
type entry[T any] struct {
	node
	value T
}

func entryOf[T any](n *node) *entry[T] { return (*entry[T])(unsafe.Pointer(n)) }

// Option configures a Queue.
type Option func(*options)

type options struct {
	wheel *timingwheel.TimingWheel
	clock clock.Clock
}

// WithWheel makes the queue schedule its items on w instead of a wheel of
// its own, so that many queues can share one wheel and its driver
// goroutine. The queue neither starts nor stops w: its owner starts it
// before the queue is used and stops it after the queue is closed. Close
// stops only the queue's own timers. The queue's clock must be w's clock:
// pass it with WithClock when it is not the real clock. Tasks run by w's
// executor are short (they take the queue's lock and move an item); an
// inline executor suits them best. A nil w means the default, a wheel of
// the queue's own.
func WithWheel(w *timingwheel.TimingWheel) Option {
	return func(o *options) { o.wheel = w }
}

// WithClock sets the clock on which due times are measured, for example a
// clock.NewMock() in tests. The default, or nil, is the real clock. A
// queue's own wheel runs on the same clock.
func WithClock(c clock.Clock) Option {
	return func(o *options) { o.clock = c }
}

// New returns an empty queue configured by opts. Unless WithWheel is
// given, the queue starts a wheel of its own (with the default 1ms tick
// and an inline executor), which Close stops: close every queue made by
// New without WithWheel, or its driver goroutine stays.
func New[T any](opts ...Option) *Queue[T] {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	q := &Queue[T]{}
	c := &q.c
	c.clock, c.realClock = o.clock, o.clock == nil
	if c.realClock {
		c.clock = clock.New()
	}
	c.base = c.clock.Now()
	c.index.seed = maphash.MakeSeed()
	c.wheel = o.wheel
	if c.wheel == nil {
		wopts := []timingwheel.Option{timingwheel.WithExecutor(func(task func()) { task() })}
		if !c.realClock {
			wopts = append(wopts, timingwheel.WithClock(c.clock))
		}
		w, err := timingwheel.New(wopts...)
		if err != nil {
			panic("queue: cannot create its wheel: " + err.Error()) // unreachable: default options
		}
		w.Start()
		c.wheel, c.ownWheel = w, true
	}
	return q
}

// Offer holds v under key, due after delay from now; a delay <= 0 makes it
// due at once (and due in the past, for the order, if negative). If key is already held, pending or due but not yet taken,
// Offer replaces its value and due time (an upsert): its previous version
// is never delivered. Among items due at the same time, the one offered
// (or re-offered) first is taken first. Offer returns ErrEmptyKey for an
// empty key and ErrClosed after Close.
func (q *Queue[T]) Offer(key string, v T, delay time.Duration) error {
	now := q.c.now()
	return q.offer(key, v, after(now, delay), now)
}

// OfferAt is Offer with an absolute due time on the queue's clock. A due
// time not after now makes the item due at once.
func (q *Queue[T]) OfferAt(key string, v T, due time.Time) error {
	return q.offer(key, v, q.c.nsOf(due), q.c.now())
}

func (q *Queue[T]) offer(key string, v T, due, now int64) error {
	if key == "" {
		return ErrEmptyKey
	}
	c := &q.c
	h := c.index.hash(key)
	c.lock()
	if c.closed {
		c.unlock()
		return ErrClosed
	}
	c.seq++
	n := c.index.find(key, h)
	if n == nil {
		e := q.newEntry()
		e.value = v
		n = &e.node
		n.key, n.hash, n.idx = key, h, idxPending
		c.index.insert(n)
	} else {
		entryOf[T](n).value = v
	}
	c.schedule(n, due, now, c.seq)
	c.unlock()
	return nil
}

// newEntry returns a recycled entry or a new one.
func (q *Queue[T]) newEntry() *entry[T] {
	if e, ok := q.free.Get().(*entry[T]); ok {
		return e
	}
	return &entry[T]{}
}

// recycle clears n, which is no longer held, and keeps its entry and
// timer for a later Offer. A fire of its timer still under way is
// harmless: fire ignores a node that is not pending.
func (q *Queue[T]) recycle(n *node) {
	e := entryOf[T](n)
	var zero T
	e.value = zero
	e.key = ""
	q.free.Put(e)
}

// item returns n's item. c.mu must be held.
func (q *Queue[T]) item(n *node) Item[T] {
	return Item[T]{Key: n.key, Value: entryOf[T](n).value, Due: q.c.timeOf(n.due)}
}

// Remove cancels the item held under key. It returns true if the item was
// held, pending or due, and not yet taken; it is then never delivered.
func (q *Queue[T]) Remove(key string) bool {
	if key == "" {
		return false
	}
	c := &q.c
	h := c.index.hash(key)
	c.lock()
	n := c.index.find(key, h)
	if n == nil {
		c.unlock()
		return false
	}
	c.release(n)
	q.recycle(n)
	c.unlock()
	return true
}

// Peek returns the item held under key, pending or due, without taking it.
func (q *Queue[T]) Peek(key string) (Item[T], bool) {
	if key == "" {
		return Item[T]{}, false
	}
	c := &q.c
	h := c.index.hash(key)
	c.lock()
	defer c.unlock()
	n := c.index.find(key, h)
	if n == nil {
		return Item[T]{}, false
	}
	return q.item(n), true
}

// Take removes and returns the earliest due item, waiting until one is
// due. It returns ctx.Err() if ctx ends first, and ErrClosed if the queue
// is or gets closed. An item is only removed by the Take that returns it:
// a Take whose context ends leaves every item in the queue for the others.
// A Take whose context has already ended takes nothing.
func (q *Queue[T]) Take(ctx context.Context) (Item[T], error) {
	c := &q.c
	var w *waiter
	c.lock()
	for {
		if c.closed {
			c.unlock()
			q.putWaiter(w)
			return Item[T]{}, ErrClosed
		}
		if w == nil {
			if err := ctx.Err(); err != nil {
				c.unlock()
				return Item[T]{}, err
			}
		}
		if n := c.take(); n != nil {
			it := q.item(n)
			q.recycle(n)
			if w != nil && len(c.ready) > 0 {
				// This taker was woken for one item; more are ready
				// than takers woken so far may take: pass it on.
				c.waiters.wakeOne()
			}
			c.unlock()
			q.putWaiter(w)
			return it, nil
		}
		if w == nil {
			w = waiterPool.Get().(*waiter)
		}
		c.waiters.pushBack(w)
		c.unlock()
		select {
		case <-w.ch:
			c.lock()
		case <-ctx.Done():
			c.lock()
			if w.listed {
				c.waiters.remove(w)
			} else {
				// Woken at the moment the context ended: hand the
				// wake-up to another taker, so that the item that
				// caused it does not wait for a new Take.
				<-w.ch
				if len(c.ready) > 0 {
					c.waiters.wakeOne()
				}
			}
			c.unlock()
			q.putWaiter(w)
			return Item[T]{}, ctx.Err()
		}
	}
}

// putWaiter returns a waiter that is unlisted and drained to the pool.
func (q *Queue[T]) putWaiter(w *waiter) {
	if w != nil {
		waiterPool.Put(w)
	}
}

// TryTake removes and returns the earliest due item, if one is due. It
// never blocks, and returns false after Close.
func (q *Queue[T]) TryTake() (Item[T], bool) {
	c := &q.c
	c.lock()
	defer c.unlock()
	if c.closed {
		return Item[T]{}, false
	}
	n := c.take()
	if n == nil {
		return Item[T]{}, false
	}
	it := q.item(n)
	q.recycle(n)
	return it, true
}

// Len returns the number of items held: pending, or due and not yet
// taken.
func (q *Queue[T]) Len() int {
	c := &q.c
	c.lock()
	defer c.unlock()
	return c.index.n
}

// Close closes the queue and returns the items it still held, pending or
// due, in due order: nothing is dropped silently. Takers blocked in Take
// return ErrClosed, and so do later calls of Offer, OfferAt and Take. Close
// stops the queue's own wheel, or its timers on a shared one (see
// WithWheel). Calling Close again returns nil.
func (q *Queue[T]) Close() []Item[T] {
	c := &q.c
	c.lock()
	if c.closed {
		c.unlock()
		return nil
	}
	c.closed = true
	nodes := c.index.all()
	slices.SortFunc(nodes, func(a, b *node) int {
		switch {
		case less(a, b):
			return -1
		case less(b, a):
			return 1
		}
		return 0
	})
	items := make([]Item[T], len(nodes))
	for i, n := range nodes {
		items[i] = q.item(n)
		if n.idx == idxPending && n.timer != nil && !c.ownWheel {
			n.timer.Stop()
		}
		n.idx = idxFree
	}
	c.index.buckets, c.index.n = nil, 0 // not the seed: hash reads it unlocked
	c.ready = nil
	for c.waiters.wakeOne() {
	}
	w := c.wheel
	c.wheel = nil
	c.unlock()
	if c.ownWheel {
		// Outside the lock: a task on the driver may be waiting for it.
		w.Stop()
	}
	return items
}
