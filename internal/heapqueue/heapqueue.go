// Package heapqueue is the keyed delay queue built the classic way, which
// the benchmarks of package queue and twbench compare the wheel-based queue
// with: a container/heap ordered by due time with a map index by key, the
// design of Java's DelayQueue and of a Redis sorted set polled for due
// members, in memory. It is a baseline, not a product.
package heapqueue

import (
	"container/heap"
	"context"
	"errors"
	"sync"
	"time"
)

// ErrClosed is returned by Offer and Take once the queue is closed.
var ErrClosed = errors.New("heapqueue: closed")

// Item is an item taken from a Queue.
type Item[T any] struct {
	Key   string
	Value T
	Due   time.Time
}

// Queue is the baseline: a keyed delay queue built the classic way,
// as Java's DelayQueue or a Redis sorted set polled for due members, in
// memory. A container/heap orders the items by (due time, offer
// sequence), a map indexes them by key, one mutex guards both. Offer and
// Remove cost O(log n). Take sleeps on a timer until the head is due, or
// until the head changes.
type Queue[T any] struct {
	mu    sync.Mutex
	items items[T]
	index map[string]*item[T]
	seq   uint64
	base  time.Time
	// wake is closed, and cleared, when the head may have become due
	// sooner; nil while no taker waits.
	wake   chan struct{}
	closed bool
}

// item is one item of a Queue.
type item[T any] struct {
	key   string
	value T
	due   int64 // ns since Queue.base
	seq   uint64
	index int // in the heap
}

// items is a min-heap of items by (due, seq) for container/heap,
// keeping each item's index current.
type items[T any] []*item[T]

func (h items[T]) Len() int { return len(h) }

func (h items[T]) Less(i, j int) bool {
	return h[i].due < h[j].due || h[i].due == h[j].due && h[i].seq < h[j].seq
}

func (h items[T]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *items[T]) Push(x any) {
	it := x.(*item[T])
	it.index = len(*h)
	*h = append(*h, it)
}

func (h *items[T]) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return it
}

// New returns an empty queue.
func New[T any]() *Queue[T] {
	return &Queue[T]{index: map[string]*item[T]{}, base: time.Now()}
}

// now returns the time since q.base, on the monotonic clock.
func (q *Queue[T]) now() int64 { return int64(time.Since(q.base)) }

// Offer holds v under key, due after delay, replacing the item already
// held under key if any.
func (q *Queue[T]) Offer(key string, v T, delay time.Duration) error {
	due := q.now() + int64(delay)
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	q.seq++
	it, ok := q.index[key]
	if ok {
		it.value, it.due, it.seq = v, due, q.seq
		heap.Fix(&q.items, it.index)
	} else {
		it = &item[T]{key: key, value: v, due: due, seq: q.seq}
		q.index[key] = it
		heap.Push(&q.items, it)
	}
	if it.index == 0 {
		q.signal()
	}
	return nil
}

// Remove cancels the item held under key, reporting whether there was
// one. Takers sleeping for a removed head wake up on their timer and
// look again.
func (q *Queue[T]) Remove(key string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	it, ok := q.index[key]
	if !ok {
		return false
	}
	heap.Remove(&q.items, it.index)
	delete(q.index, key)
	return true
}

// Take removes and returns the earliest item once it is due, waiting for
// it. It returns ctx.Err() if ctx ends first, and ErrClosed once the
// queue is closed.
func (q *Queue[T]) Take(ctx context.Context) (Item[T], error) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return Item[T]{}, ErrClosed
		}
		wait := time.Duration(-1) // no item: until woken
		if len(q.items) > 0 {
			head := q.items[0]
			if d := head.due - q.now(); d > 0 {
				wait = time.Duration(d)
			} else {
				heap.Pop(&q.items)
				delete(q.index, head.key)
				if len(q.items) > 0 {
					q.signal() // the next head may be due, for another taker
				}
				q.mu.Unlock()
				return Item[T]{Key: head.key, Value: head.value, Due: q.base.Add(time.Duration(head.due))}, nil
			}
		}
		if q.wake == nil {
			q.wake = make(chan struct{})
		}
		wake := q.wake
		q.mu.Unlock()

		var timeout <-chan time.Time
		if wait > 0 {
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			timeout = timer.C
		}
		select {
		case <-wake:
		case <-timeout:
		case <-ctx.Done():
			return Item[T]{}, ctx.Err()
		}
	}
}

// signal wakes every waiting taker. q.mu must be held.
func (q *Queue[T]) signal() {
	if q.wake != nil {
		close(q.wake)
		q.wake = nil
	}
}

// Len returns the number of items held.
func (q *Queue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

// Close drops every item and makes waiting and later Takes return
// ErrClosed.
func (q *Queue[T]) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.items, q.index = nil, nil
	q.signal()
}
