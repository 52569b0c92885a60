package durable

import (
	"context"
	"sync"
	"sync/atomic"
)

// How Run claims. Each claim is a store write (an fsync on the file, a
// round trip to Redis), so a claim that brings one message for one idle
// worker makes the store's write rate the queue's delivery rate. Run's
// dispatcher claims instead for every worker idle at once, plus a window
// of messages for the workers that will finish while the claim is under
// way: about as many as finished during the previous claims (see
// adjustWindow). With quick handlers the window grows and the claims
// carry many messages each; with slow ones it falls to nothing, and no
// message waits in Run for long. The window is bounded
// (prefetchPerWorker), and so is what waits.

// prefetchPerWorker bounds the window: at most this many messages per
// worker wait in Run for a worker.
const prefetchPerWorker = 4

// maxClaim bounds one claim, so that a store call stays short (a script
// on Redis holds the server while it runs).
const maxClaim = 64

// runner is one Run: a dispatcher (the goroutine of Run) that claims and
// hands the deliveries over through jobs, and the workers, which hand each
// out at its due time, handle it, and say when they are idle.
type runner struct {
	q   *Queue
	h   Handler
	ctx context.Context

	jobs     chan *Delivery // claimed, waiting for a worker; never full when sent to
	workers  int
	pending  atomic.Int64  // messages sent to jobs that no worker is done with
	finished atomic.Int64  // messages the workers are done with
	wake     chan struct{} // a worker went idle (capacity 1)
	window   int           // messages claimed for workers that will finish meanwhile
	most     int           // the largest window

	acks     sync.WaitGroup // acks being written
	ackSlots chan struct{}  // one token per ack being written
}

func newRunner(ctx context.Context, q *Queue, h Handler, workers int) *runner {
	r := &runner{
		q:        q,
		h:        h,
		ctx:      ctx,
		jobs:     make(chan *Delivery, workers*(1+prefetchPerWorker)),
		wake:     make(chan struct{}, 1),
		ackSlots: make(chan struct{}, maxPendingAcks),
		workers:  workers,
		most:     workers * prefetchPerWorker,
	}
	return r
}

// done says that a worker is done with a message.
func (r *runner) done() {
	r.finished.Add(1)
	r.pending.Add(-1)
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// demand is how many messages to claim for: one for each worker with no
// message, neither in hand nor waiting for it, plus the window. It is
// positive only once at least half the window was taken by the workers,
// so that claims carry many messages, and the next claim is under way
// before the last waiting message is taken.
func (r *runner) demand() int {
	want := r.workers + r.window - int(r.pending.Load())
	if want <= r.window/2 {
		return 0
	}
	return want
}

// dispatch claims for the workers until ctx ends (nil) or claiming fails
// for good (its error).
func (r *runner) dispatch() error {
	for {
		for r.demand() <= 0 {
			select {
			case <-r.wake:
			case <-r.ctx.Done():
				return nil
			}
		}
		finished := r.finished.Load()
		ds, err := r.q.claimDue(r.ctx, r.claimSize)
		if err != nil {
			if r.ctx.Err() != nil {
				return nil
			}
			return err
		}
		r.pending.Add(int64(len(ds)))
		for _, d := range ds {
			r.jobs <- d
		}
		r.adjustWindow(int(r.finished.Load() - finished))
	}
}

// adjustWindow sets the window after a claim during which the workers
// finished n messages: twice that, for the workers may have waited for
// the claim and will be quicker with messages at hand, but not below
// three quarters of the window before, so that a claim during which they
// had nothing to do does not make the next one small; at most most. With
// slow handlers, n is 0 and the window shrinks by a quarter (at least one) each claim.
func (r *runner) adjustWindow(n int) {
	r.window = min(max(2*n, r.window*3/4), r.most)
}

// claimSize is how many to claim now: the demand (at least one, as it
// is when a claim that found nothing waited), within the room left in
// jobs and maxClaim. jobs holds no more than pending, and pending plus
// demand is at most the workers plus the window, so there is room. Of
// those, held are claimed held (see Store.Claim): all but one for each
// idle worker, so that a message waiting in Run for a worker is not
// handed out yet, and an Enqueue or Cancel of it from any process wins.
func (r *runner) claimSize() (n, held int) {
	pending := int(r.pending.Load())
	n = min(max(r.demand(), 1), cap(r.jobs)-pending, maxClaim)
	idle := max(r.workers-pending, 0)
	return n, max(n-idle, 0)
}
