// Package delayqueue is a blocking queue of elements that can be taken
// only once their expiration has passed, with the API of
// github.com/RussellLuo/timingwheel/delayqueue, so that programs using
// that package can switch by changing the import path.
//
// Expirations and the clock Poll reads are int64 milliseconds, as there;
// Poll sleeps on the real clock for the time until the earliest
// expiration. New programs that need a delay queue should use the
// timingwheel module's queue package, which is keyed, cancellable and
// takes a context.
package delayqueue

import (
	"container/heap"
	"sync"
	"time"
)

// DelayQueue is an unbounded queue of elements, each with an expiration.
// Poll sends each element on C once its expiration has passed, earliest
// first and, among equal expirations, in the order they were offered.
// Offer may be called from many goroutines at once; Poll should run in
// one goroutine at a time.
type DelayQueue struct {
	// C receives the elements whose expiration has passed, while Poll
	// runs. It is unbuffered.
	C chan interface{}

	mu    sync.Mutex
	items items
	seq   uint64
	wake  chan struct{} // signalled when the earliest expiration moves earlier
}

// New returns an empty queue with room for size elements before it
// grows. A size < 0 counts as 0.
func New(size int) *DelayQueue {
	return &DelayQueue{
		C:     make(chan interface{}),
		items: make(items, 0, max(size, 0)),
		wake:  make(chan struct{}, 1),
	}
}

// Offer adds elem, to be sent on C once the clock Poll reads reaches
// expiration (in milliseconds). It never blocks on Poll.
func (dq *DelayQueue) Offer(elem interface{}, expiration int64) {
	dq.mu.Lock()
	dq.seq++
	heap.Push(&dq.items, item{elem: elem, expiration: expiration, seq: dq.seq})
	earliest := dq.items[0].seq == dq.seq
	dq.mu.Unlock()
	if earliest {
		select {
		case dq.wake <- struct{}{}:
		default:
		}
	}
}

// Poll sends the elements on C as their expirations pass, according to
// nowF, which returns the current time in milliseconds, until exitC is
// closed. It blocks meanwhile. An element taken out but not yet received
// when exitC is closed goes back into the queue, so none is lost.
func (dq *DelayQueue) Poll(exitC chan struct{}, nowF func() int64) {
	var sleep *time.Timer
	defer func() {
		if sleep != nil {
			sleep.Stop()
		}
	}()
	for {
		it, wait, due := dq.take(nowF())
		if due {
			select {
			case dq.C <- it.elem:
				continue
			case <-exitC:
				dq.putBack(it)
				return
			}
		}
		var timeout <-chan time.Time
		if wait > 0 {
			d := time.Duration(wait) * time.Millisecond
			if sleep == nil {
				sleep = time.NewTimer(d)
			} else {
				sleep.Reset(d)
			}
			timeout = sleep.C
		}
		select {
		case <-dq.wake:
		case <-timeout:
		case <-exitC:
			return
		}
	}
}

// take removes and returns the earliest element if its expiration is not
// after now; otherwise it returns the milliseconds until that expiration,
// or 0 if the queue is empty.
func (dq *DelayQueue) take(now int64) (it item, wait int64, due bool) {
	dq.mu.Lock()
	defer dq.mu.Unlock()
	if len(dq.items) == 0 {
		return item{}, 0, false
	}
	if head := dq.items[0]; head.expiration > now {
		return item{}, head.expiration - now, false
	}
	return heap.Pop(&dq.items).(item), 0, true
}

// putBack returns an element Poll took but could not deliver.
func (dq *DelayQueue) putBack(it item) {
	dq.mu.Lock()
	heap.Push(&dq.items, it)
	dq.mu.Unlock()
}

// Len returns the number of elements in the queue, not counting one that
// Poll has taken and is sending.
func (dq *DelayQueue) Len() int {
	dq.mu.Lock()
	defer dq.mu.Unlock()
	return len(dq.items)
}

type item struct {
	elem       interface{}
	expiration int64
	seq        uint64 // the order of Offer, for FIFO among equal expirations
}

// items is a min-heap by expiration, then seq.
type items []item

func (h items) Len() int { return len(h) }

func (h items) Less(i, j int) bool {
	if h[i].expiration != h[j].expiration {
		return h[i].expiration < h[j].expiration
	}
	return h[i].seq < h[j].seq
}

func (h items) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

func (h *items) Push(x any) { *h = append(*h, x.(item)) }

func (h *items) Pop() any {
	old := *h
	n := len(old) - 1
	it := old[n]
	old[n] = item{} // keep no element alive
	*h = old[:n]
	return it
}
