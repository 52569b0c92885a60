package durable

import (
	"context"
	"reflect"
	"slices"
	"sync"
)

// Pausing a queue (issue #25): the flag is the store's (Store.SetPaused),
// so that every process and every restart sees it; a claim of a paused
// queue leases nothing, and the queue then waits for a wake-up rather
// than for the next due time (no polling). A Resume wakes the receivers:
// in other processes through the store's Notifier (Redis, PostgreSQL), in
// this one through the queues registered on the store (localQueues),
// which is how queues that share a BoltStore or a memstore learn of it.

// Pause stops every process from receiving from the queue until Resume; Enqueue, Cancel and the
// leases already out go on.
//
// It is kept in the store, so it holds across processes and restarts
// (Stats.Paused says so) until a Resume, from any process. Receivers
// blocked in Receive or Run stop taking new messages within one wake-up:
// a claim of a paused queue leases nothing, and a message claimed ahead
// of its due time (by Receive, or held by Run for a busy worker) before
// the pause is not handed out: its confirmation (Store.Confirm) fails with ErrPaused,
// and the queue gives it back to the store, pending at its due time
// again, costing no attempt and leaving no error text (as with Close).
// Deliveries handed
// out before the pause go on: they are acked, retried and extended as
// usual, and expired leases are reaped.
func (q *Queue) Pause(ctx context.Context) error {
	if q.pauser == nil {
		return q.pauseUnsupported()
	}
	return q.call(func() error { return q.pauser.SetPaused(ctx, true) })
}

// Resume undoes Pause: receivers in every process take messages again,
// woken at once, without polling (through the store's notifications for
// a shared store such as Redis, and directly for the queues of this
// process on the same store). Resuming a queue that is not paused does
// nothing.
func (q *Queue) Resume(ctx context.Context) error {
	if q.pauser == nil {
		return q.pauseUnsupported()
	}
	if err := q.call(func() error { return q.pauser.SetPaused(ctx, false) }); err != nil {
		return err
	}
	qs := localQueues.on(q.store)
	if !slices.Contains(qs, q) {
		qs = append(qs, q)
	}
	for _, o := range qs {
		o.resumed()
	}
	return nil
}

// resumed wakes a receiver of q, after a Resume of its store in this
// process. Its claim finds the queue resumed and wakes as many more as
// it counts messages due (see schedule).
func (q *Queue) resumed() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.paused = false
	if !q.closed {
		q.wakeOneLocked()
	}
}

// localQueues are the open queues of this process, by store.
var localQueues = queueRegistry{m: make(map[Store][]*Queue)}

type queueRegistry struct {
	mu sync.Mutex
	m  map[Store][]*Queue
}

// comparableStore reports whether s can be a map key (a pointer can; a struct
// value holding a slice cannot).
func comparableStore(s Store) bool { return reflect.TypeOf(s).Comparable() }

func (r *queueRegistry) add(q *Queue) {
	if !comparableStore(q.store) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[q.store] = append(r.m[q.store], q)
}

func (r *queueRegistry) remove(q *Queue) {
	if !comparableStore(q.store) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	qs := r.m[q.store]
	for i, o := range qs {
		if o == q {
			qs = append(qs[:i:i], qs[i+1:]...)
			break
		}
	}
	if len(qs) == 0 {
		delete(r.m, q.store)
	} else {
		r.m[q.store] = qs
	}
}

// on returns the open queues of this process on s (none if s is not
// comparable).
func (r *queueRegistry) on(s Store) []*Queue {
	if !comparableStore(s) {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*Queue(nil), r.m[s]...)
}
