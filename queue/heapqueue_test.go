package queue

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// heapQueue is the classic keyed delay queue the benchmarks compare with:
// a container/heap of items ordered by (due, offer sequence) and a map
// from key to item, under one mutex. It is the design of Java's
// DelayQueue (a PriorityQueue; Take sleeps until the head is due) and of a
// Redis sorted set used as a delay queue, in memory. Offer and Remove are
// O(log n).
type heapQueue[T any] struct {
	mu     sync.Mutex
	items  heapItems[T]
	index  map[string]*heapItem[T]
	seq    uint64
	base   time.Time
	wake   chan struct{} // closed when the head changes; nil if nobody waits
	closed bool
}

type heapItem[T any] struct {
	key   string
	value T
	due   int64 // ns since base, as in Queue
	seq   uint64
	idx   int
}

type heapItems[T any] []*heapItem[T]

func (h heapItems[T]) Len() int { return len(h) }
func (h heapItems[T]) Less(i, j int) bool {
	return h[i].due < h[j].due || h[i].due == h[j].due && h[i].seq < h[j].seq
}
func (h heapItems[T]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}
func (h *heapItems[T]) Push(x any) {
	it := x.(*heapItem[T])
	it.idx = len(*h)
	*h = append(*h, it)
}
func (h *heapItems[T]) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return it
}

func newHeapQueue[T any]() *heapQueue[T] {
	return &heapQueue[T]{index: map[string]*heapItem[T]{}, base: time.Now()}
}

func (q *heapQueue[T]) now() int64 { return int64(time.Since(q.base)) }

// Offer upserts key, due after delay.
func (q *heapQueue[T]) Offer(key string, v T, delay time.Duration) error {
	due := after(q.now(), delay)
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	q.seq++
	if it, ok := q.index[key]; ok {
		it.value, it.due, it.seq = v, due, q.seq
		heap.Fix(&q.items, it.idx)
		if it.idx == 0 {
			q.signal()
		}
		return nil
	}
	it := &heapItem[T]{key: key, value: v, due: due, seq: q.seq}
	q.index[key] = it
	heap.Push(&q.items, it)
	if it.idx == 0 {
		q.signal()
	}
	return nil
}

// Remove cancels key's item.
func (q *heapQueue[T]) Remove(key string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	it, ok := q.index[key]
	if !ok {
		return false
	}
	heap.Remove(&q.items, it.idx)
	delete(q.index, key)
	return true
}

// Take waits until the head is due and takes it.
func (q *heapQueue[T]) Take(ctx context.Context) (Item[T], error) {
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
		var wait time.Duration = -1
		if len(q.items) > 0 {
			head := q.items[0]
			if d := head.due - q.now(); d > 0 {
				wait = time.Duration(d)
			} else {
				heap.Pop(&q.items)
				delete(q.index, head.key)
				if len(q.items) > 0 {
					q.signal() // the next head may be due for another taker
				}
				q.mu.Unlock()
				return Item[T]{Key: head.key, Value: head.value, Due: q.base.Add(time.Duration(head.due))}, nil
			}
		}
		if q.wake == nil {
			q.wake = make(chan struct{})
		}
		ch := q.wake
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
		case <-ch:
		case <-timeout:
		case <-ctx.Done():
			return Item[T]{}, ctx.Err()
		}
	}
}

func (q *heapQueue[T]) signal() {
	if q.wake != nil {
		close(q.wake)
		q.wake = nil
	}
}

func (q *heapQueue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

func (q *heapQueue[T]) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.signal()
}
