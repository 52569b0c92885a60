package durable

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// Handler handles one delivery. Returning nil acks it; returning an error, or panicking, retries it
// with the queue's back-off (or sends it to the dead letters after its last attempt: the message's
// MaxAttempts, or the queue's), and the error's text is kept with the message
// (Delivery.RetryWithError): the next attempt's Delivery.LastError and Queue.Get's Info.LastError
// show it, cut to MaxErrorLen bytes. A panic's text is the panic value followed by the stack. Two
// errors, wrapped or not, say otherwise: a Permanent one sends the message to the dead letters at
// once, and a Snooze brings it back later without counting the attempt (see Delivery.Settle).
type Handler func(ctx context.Context, d *Delivery) error

// ErrInvalidRunner is wrapped by the error Run returns for workers < 1 or
// a nil Handler.
var ErrInvalidRunner = errors.New("durable: invalid runner arguments")

// ErrHandlerPanic is wrapped by the error a panicking handler's attempt
// fails with.
var ErrHandlerPanic = errors.New("durable: handler panicked")

// Run receives messages and calls h for each, with at most workers handlers running at once, until ctx
// ends. While h runs, Run extends the lease so that a handler slower than the visibility timeout is not
// redelivered meanwhile; if the lease is lost anyway (the message was replaced by an Enqueue, or its lease
// expired while the process was stalled), h's ctx is cancelled. When ctx ends, Run stops receiving and returns once every running handler has returned.
// It returns ErrClosed on a closed queue and an error for workers < 1 or a nil h.
//
// Run claims for its workers in batches, each one store call (one round
// trip to a server): as many due messages at once as it has workers
// idle, plus, when handlers are quick, up to four times as many as they
// finished during the previous claim. A message claimed beyond the idle workers
// waits in Run for the next free worker: up to about three claims' time
// while handlers keep that pace, and never more than four messages per
// worker wait in all.
//
// A message already due when Run claims it is handed out by the claim,
// on a lease of the visibility timeout, whether a worker is idle for it
// or it waits in Run for one: from the claim on, an Enqueue or a Cancel
// of it loses, as against a message in a handler's hands (Cancel returns
// ErrInFlight), and the worker that takes it calls the store no more
// before its handler starts. A message claimed ahead of its due time
// (at most 50ms ahead) for a busy worker is held (see Store.Claim): it
// is not handed out yet, so an Enqueue or a Cancel of it, from any
// process, that returns before a worker takes it wins, as it does
// against a message claimed ahead by Receive: Cancel succeeds, and
// neither the cancelled message nor the replaced version reaches a
// handler. Its lease is short, HeldLease (2s; half the visibility timeout
// if that is shorter), whatever the visibility timeout, and Run extends
// it by as much every third of it while the message waits. The worker
// that takes it confirms it with the store first, which gives it a lease
// of the visibility timeout in the same write (one script call on Redis,
// one statement on PostgreSQL and MySQL, shared with the acks and
// confirmations of the other workers under way at the same time; on the
// file, a lookup in memory and a write of the deadline); if that fails,
// the handler does not run, and the message, never handed out, costs no
// attempt. Acks are
// written in the background as handlers return (on the file, those of
// several handlers share one transaction and fsync), so that a worker
// takes its next message without waiting for the write; at most 256 acks wait to be
// written (a worker with one more waits for room), and Run returns only once every ack was written or
// failed. An ack that fails is logged: the message is delivered again
// when its lease expires (at least once). Retries are written before the
// worker goes on.
//
// The handler's ctx carries ctx's values and ends when ctx ends or the
// lease is lost (context.Cause says which: ErrLeaseLost for the latter),
// or, for a message with a Timeout, Timeout after the hand-out, with
// ctx.Err() == context.DeadlineExceeded (see Delivery.AttemptContext).
// A handler that returns that error, or any other, after its Timeout
// has failed its attempt, retried like any other failure, even if Run's
// ctx ended meanwhile.
// Run extends the lease every third of the visibility timeout, by the
// visibility timeout, and at once when a handler starts on a message
// that waited in Run a third of it already; d.Deadline keeps the
// deadline as the handler started. A message handed out by the claim that
// waits in Run for a worker has its lease extended too, by the visibility
// timeout once a third of it has passed, however long the handlers before
// it run: it reaches its handler at the attempt of its claim (and its
// Timeout, if it has one, counts from the claim).
//
// Shutdown: when ctx ends, the running handlers' ctx ends too, and Run
// waits for each of them to return, however long that takes: a handler
// that never returns keeps Run from returning, and its lease goes on being
// extended, so its message is not delivered to anyone else while this
// process lives. If the process exits instead, the lease expires after
// the visibility timeout and the message is delivered again. A handler
// that Run's shutdown stopped (ctx ended, and it returned
// context.Canceled or context.DeadlineExceeded, before its message's
// Timeout if it has one) gives its attempt back:
// the message is pending again at once, with its attempt number and
// LastError as they were before this hand-out. A handler that returns
// another error has its attempt retried like any other failure; one that
// returns nil is acked. Messages claimed that no handler started when ctx
// ended go back to the store, pending at their due time again, costing no
// attempt and leaving no error text (as Close does with a message claimed
// ahead).
//
// A hand-out counts an attempt: the claim's, for a message already due,
// or the confirmation's, for one claimed ahead. A message that waited in
// Run and reached no handler gives it back when Run's ctx ends (see
// above); after a crash of the process, a message the claim handed out
// comes back when its lease expires, as one in a handler's hands does,
// at its next attempt with LeaseExpired. A message Run held for
// a busy worker that never reached one costs nothing whatever ends its
// lease: given back (shutdown, a pause), or, after a crash of the process
// or a confirmation that failed, reaped when its lease expires, with no
// attempt counted and no LastError (store.ExpiredLease.Held). A held
// message comes back within HeldLease (2s) after a crash of the process
// (once a queue on the store reaps it: at its deadline for a queue that
// claims or reaps after the crash; a queue idle since before the crash
// learns of the deadline at its next wake-up, which a shared store's
// notifier brings within its safety poll, 5s by default for pgstore and
// redisstore), at the attempt it had and with the LastError it had; the messages in the hands of handlers come back when
// their lease expires, the visibility timeout after its last extension.
// The file store knows held leases only in the process that claimed them:
// after a restart, one still unexpired counts as handed out, and comes
// back within HeldLease too, but at its next attempt with LeaseExpired.
// A message claimed ahead of its due time for an idle worker (at most
// 50ms ahead, see Receive) has a lease of the visibility timeout.
//
// While the queue is paused (see Pause), Run takes no new message: a
// message it holds for a busy worker goes back to the store when the
// worker comes to it, and the handlers running go on, as do the messages
// handed out by a claim before the pause. A Resume wakes it.
//
// Run returns nil when ctx ends, ErrClosed if the queue is closed while
// it runs, and ErrCorrupt if the store is damaged. A store that cannot
// come back ends it too, with the store's error, which wraps ErrClosed:
// a store closed under the queue, a PostgreSQL pool or a Redis client
// closed under the store. A store that is down does not end it: claims
// are retried with a back-off (from 10ms to 1s), as Receive does, and
// every failed store call of Run (claim, confirm, ack, retry, extend,
// release, reap) is reported to the Observer as an EventStoreError
// carrying the operation and the error, and to the logger.
//
// Each of those calls is bounded by WithStoreTimeout (by default
// min(5s, visibility timeout/4)): a store that hangs (a server stopped,
// packets dropped) shows as errors within that bound, not as silence.
func (q *Queue) Run(ctx context.Context, workers int, h Handler) error {
	switch {
	case workers < 1:
		return fmt.Errorf("%w: workers is %d, want at least 1", ErrInvalidRunner, workers)
	case h == nil:
		return fmt.Errorf("%w: nil Handler", ErrInvalidRunner)
	}
	if err := q.enter(); err != nil {
		return err
	}
	q.active.Done()

	r := newRunner(ctx, q, h, workers)
	stopKeeping := r.keepWaiting()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.work()
		}()
	}
	err := r.dispatch()
	close(r.jobs)
	wg.Wait()
	stopKeeping()
	r.acks.Wait()
	return err
}

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

	waitingMu sync.Mutex
	waiting   map[*Delivery]*waiting // claimed, in jobs, no worker took it yet
}

// waiting is the state of a delivery while it waits in jobs: its mu
// orders the keeper's extensions before the worker's confirmation or
// extension.
type waiting struct {
	mu    sync.Mutex
	taken bool // by a worker, or its lease was lost: the keeper leaves it
}

func newRunner(ctx context.Context, q *Queue, h Handler, workers int) *runner {
	r := &runner{
		q:        q,
		h:        h,
		ctx:      ctx,
		jobs:     make(chan *Delivery, workers*(1+prefetchPerWorker)),
		wake:     make(chan struct{}, 1),
		ackSlots: make(chan struct{}, maxPendingAcks),
		waiting:  make(map[*Delivery]*waiting),
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

// How Run claims. Each claim is a store write (an fsync on the file, a
// round trip to Redis), so a claim that brings one message for one idle
// worker makes the store's write rate the queue's delivery rate. Run's
// dispatcher claims instead for every worker idle at once, plus a window
// of messages for the workers that will finish while the claim is under
// way: a few times as many as finished during the previous claims (see
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
		r.waitingMu.Lock()
		for _, d := range ds {
			r.waiting[d] = &waiting{}
		}
		r.waitingMu.Unlock()
		for _, d := range ds {
			r.jobs <- d
		}
		r.adjustWindow(int(r.finished.Load() - finished))
	}
}

// adjustWindow sets the window after a claim during which the workers
// finished n messages: four times that, for the workers may have waited
// for the claim and will be quicker with messages at hand, and each claim
// is a commit that fewer, larger claims share; but not below three
// quarters of the window before, so that a claim during which they had
// nothing to do does not make the next one small; at most most. With slow
// handlers, n is 0 and the window shrinks by a quarter (at least one) each
// claim.
func (r *runner) adjustWindow(n int) {
	r.window = min(max(4*n, r.window*3/4), r.most)
}

// claimSize is how many to claim now: the demand (at least one, as it
// is when a claim that found nothing waited), within the room left in
// jobs and maxClaim. jobs holds no more than pending, and pending plus
// demand is at most the workers plus the window, so there is room.
//
// The first messages, one for each idle worker, are handed out by the
// claim, on leases of the visibility timeout, and so are the rest if due
// already; the rest claimed ahead of their due time (held, see
// Store.Claim) wait for a busy worker: not handed out yet, so an Enqueue
// or Cancel of one from any process wins, and on a short lease
// (HeldLease), so that after a crash they come back soon. One claim, one
// store write, brings all.
func (r *runner) claimSize() (n, held int) {
	pending := int(r.pending.Load())
	n = min(max(r.demand(), 1), cap(r.jobs)-pending, maxClaim)
	idle := max(r.workers-pending, 0)
	return n, max(n-idle, 0)
}

// keepWaiting keeps the leases of the messages that wait in jobs alive
// until a worker takes them, until the returned function is called (after
// the workers stopped). Every third of HeldLease it extends each held one
// by HeldLease, and each handed out by the claim by the visibility timeout
// once a third of that has passed since its claim or last extension: a
// message waiting behind handlers that run long is not reaped before its
// own handler starts. A lease found lost (the message was replaced,
// cancelled or reaped) is left alone: the worker's confirmation (held)
// or extension (see freshen) finds the same, and runs no handler. A failed
// extension is reported and tried again next time; if the store stays
// down, the lease expires, and a held message comes back costing nothing
// (store.ExpiredLease.Held).
func (r *runner) keepWaiting() (stop func()) {
	q := r.q
	ticker := q.clock.Ticker(max(q.cfg.heldLease()/3, time.Millisecond))
	stopped := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer ticker.Stop()
		for {
			select {
			case <-stopped:
				return
			case <-ticker.C:
			}
			r.waitingMu.Lock()
			ws := make(map[*Delivery]*waiting, len(r.waiting))
			for d, w := range r.waiting {
				ws[d] = w
			}
			r.waitingMu.Unlock()
			for d, w := range ws {
				r.extendWaiting(d, w)
			}
		}
	}()
	return func() {
		close(stopped)
		<-done
	}
}

// extendWaiting extends the lease of d, waiting in jobs, when it is due
// for it (see keepWaiting), unless a worker took it already.
func (r *runner) extendWaiting(d *Delivery, w *waiting) {
	q := r.q
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.taken {
		return
	}
	by := q.cfg.heldLease()
	if !d.held {
		if !r.staleLease(d) {
			return
		}
		by = q.cfg.visibility
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), q.cfg.callTimeout())
	defer cancel()
	start := q.clock.Now() // the store's new deadline is no earlier than start+by
	err := q.call(func() error { return q.store.Extend(ctx, store.ExtendParams{Lease: d.ref(), By: by}) })
	switch {
	case err == nil:
		d.Deadline = start.Add(by)
	case errors.Is(err, ErrLeaseLost):
		w.taken = true
	case errors.Is(err, ErrClosed):
	default:
		q.storeError(OpExtend, d, err)
		q.log.Warn("durable: extending the lease of a message waiting for a busy worker failed; trying again",
			"id", d.ID, "held", d.held, "err", err)
	}
}

// take says that a worker took d from jobs: the keeper extends its lease
// no more (and is done with any extension under way).
func (r *runner) take(d *Delivery) {
	r.waitingMu.Lock()
	w := r.waiting[d]
	delete(r.waiting, d)
	r.waitingMu.Unlock()
	if w != nil {
		w.mu.Lock()
		w.taken = true
		w.mu.Unlock()
	}
}

// maxPendingAcks bounds the acks of a Run waiting to be written; a worker
// whose handler returns nil waits for a slot among them.
const maxPendingAcks = 256

// work is one worker: it hands out and handles what the dispatcher gives
// it, until the dispatcher stops. What it gets after ctx ended goes back
// to the store unhandled.
func (r *runner) work() {
	for d := range r.jobs {
		r.take(d)
		if r.ctx.Err() != nil {
			r.q.release(d)
		} else if d, err := r.q.deliver(d); err == nil {
			r.handle(d)
		}
		r.done()
	}
}

// handle runs h on d under a lease that is kept alive, then acks d (in the
// background) or retries it.
func (r *runner) handle(d *Delivery) {
	q := r.q
	hctx, cancel := context.WithCancelCause(r.ctx)
	defer cancel(nil)
	if !r.freshen(hctx, d) {
		return
	}
	stopKeeping := q.keepLease(hctx, cancel, d)
	actx := context.Context(hctx)
	if d.Timeout > 0 {
		var cancelAttempt context.CancelFunc
		actx, cancelAttempt = d.AttemptContext(hctx)
		defer cancelAttempt()
	}
	started := q.clock.Now()
	err := callHandler(actx, r.h, d)
	q.observe(Event{Kind: EventHandled, ID: d.ID, MessageKind: d.Kind, Attempt: d.Attempt, Duration: q.clock.Since(started), Err: err})
	stopKeeping()

	if errors.Is(context.Cause(hctx), ErrLeaseLost) {
		// The lease keeper found the lease lost, and reported it: an Ack
		// or a Retry would find the same, and change nothing.
		return
	}
	if err == nil {
		r.ackLater(d)
		return
	}
	if r.stoppedBy(d, err) {
		r.giveBack(d)
		return
	}
	if errors.Is(err, ErrHandlerPanic) {
		q.log.Error("durable: handler panicked", "id", d.ID, "attempt", d.Attempt, "err", err)
	}
	settleCtx, cancelSettle := context.WithTimeout(context.WithoutCancel(r.ctx), q.cfg.callTimeout())
	defer cancelSettle()
	if settleErr := d.settleFailure(settleCtx, err); settleErr != nil {
		q.log.Warn("durable: retry after the handler failed", "id", d.ID, "attempt", d.Attempt,
			"handler_err", err, "err", settleErr)
	}
}

// stoppedBy reports whether the error err of d's handler is Run's
// shutdown: Run's ctx ended, and the handler returned its ctx's error
// (context.Canceled or context.DeadlineExceeded), not one of its own; and
// d's Timeout, if it has one, has not passed: a handler that outlived it
// failed its attempt, whatever ended its ctx.
func (r *runner) stoppedBy(d *Delivery, err error) bool {
	return r.ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) &&
		!d.timedOut()
}

// giveBack ends the lease of d, whose handler Run's shutdown stopped: the
// message is pending again at once, with its attempt taken back
// (RetryParams.Unhanded) and its LastError as it was.
func (r *runner) giveBack(d *Delivery) {
	q := r.q
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), q.cfg.callTimeout())
	defer cancel()
	err := q.call(func() error {
		return q.store.Retry(ctx, store.RetryParams{Lease: d.ref(), Unhanded: true})
	})
	switch {
	case err == nil:
		q.wakeAt(q.clock.Now())
	case errors.Is(err, ErrLeaseLost):
		d.observeResult(EventRetried, err)
	default:
		q.storeError(OpRelease, d, err)
		q.log.Warn("durable: giving back a message whose handler Run stopped failed; its lease will expire",
			"id", d.ID, "attempt", d.Attempt, "err", err)
	}
}

// freshen extends by the visibility timeout the lease of a message still
// on a short lease (see HeldLease; the confirmation of a held message
// gives it the visibility timeout's, so this is one claimed ahead among
// the first of its claim that the store left on the short lease, as
// Redis with shards may: see store.ShardedOrder), or that waited in Run
// for a third of the visibility timeout, before its handler starts, as the
// lease keeper would have by then. It reports whether the handler is to
// run: not if the lease was lost meanwhile. Another failure leaves the
// lease to the keeper, unless the keeper's first extension, a third of
// the visibility timeout from now, would come after the lease ends (a
// short lease): then the message is given back, costing no attempt (its
// handler did not start), and the handler does not run.
func (r *runner) freshen(ctx context.Context, d *Delivery) bool {
	q := r.q
	if !d.held && !r.staleLease(d) {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, q.cfg.callTimeout())
	deadline, err := d.extendUnseen(ctx, q.cfg.visibility)
	cancel()
	switch {
	case err == nil:
		d.Deadline = deadline
	case errors.Is(err, ErrLeaseLost):
		q.log.Warn("durable: a message's lease was lost while it waited for a worker", "id", d.ID, "attempt", d.Attempt)
		return false
	case q.clock.Until(d.Deadline) <= q.cfg.visibility/3:
		q.log.Warn("durable: extending a waiting message's lease at its hand-out failed; giving it back", "id", d.ID, "err", err)
		q.release(d)
		return false
	}
	return true
}

// staleLease reports whether d, handed out, is on a lease that a third of
// the visibility timeout has passed since its claim or last extension:
// the lease keeper would have extended it by then.
func (r *runner) staleLease(d *Delivery) bool {
	q := r.q
	return q.clock.Until(d.Deadline) <= q.cfg.visibility-q.cfg.visibility/3
}

// ackLater writes d's ack in a goroutine of its own, once one of the
// maxPendingAcks slots is free. Acks under way at once reach the store
// together: the file store writes them in one transaction (one fsync);
// Redis runs each as a script call of its own.
func (r *runner) ackLater(d *Delivery) {
	r.ackSlots <- struct{}{}
	r.acks.Add(1)
	go func() {
		defer r.acks.Done()
		defer func() { <-r.ackSlots }()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), r.q.cfg.callTimeout())
		defer cancel()
		if err := d.Ack(ctx); err != nil {
			r.q.log.Warn("durable: ack after the handler failed", "id", d.ID, "attempt", d.Attempt, "err", err)
		}
	}()
}

// callHandler calls h, turning a panic into an error wrapping
// ErrHandlerPanic, with the stack.
func callHandler(ctx context.Context, h Handler, d *Delivery) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w: %v\n%s", ErrHandlerPanic, v, debug.Stack())
		}
	}()
	return h(ctx, d)
}

// keepLease extends d's lease every third of the visibility timeout until
// the returned function is called, and cancels the handler's ctx with
// ErrLeaseLost when an extension finds the lease lost. The returned
// function waits for the extender to stop, so that no Extend runs after
// it (and so races the Ack or Retry that follows).
func (q *Queue) keepLease(hctx context.Context, cancel context.CancelCauseFunc, d *Delivery) (stop func()) {
	visibility := q.cfg.visibility
	stopped := make(chan struct{})
	done := make(chan struct{})
	// The ticker starts before the handler does, so the first extension is
	// due a third of the visibility timeout after the hand-out.
	ticker := q.clock.Ticker(max(visibility/3, time.Millisecond))
	go func() {
		defer close(done)
		defer ticker.Stop()
		for {
			select {
			case <-stopped:
				return
			case <-ticker.C:
			}
			// Extend even after ctx ended: the handler still runs, and its
			// message must not go to anyone else meanwhile.
			extendCtx, cancelExtend := context.WithTimeout(context.WithoutCancel(hctx), q.cfg.callTimeout())
			_, err := d.extend(extendCtx, visibility)
			cancelExtend()
			switch {
			case err == nil:
			case errors.Is(err, ErrLeaseLost):
				cancel(ErrLeaseLost)
				return
			case errors.Is(err, ErrClosed):
				return
			default:
				q.log.Warn("durable: extending a running handler's lease failed; trying again", "id", d.ID, "err", err)
			}
		}
	}()
	return func() {
		close(stopped)
		<-done
	}
}
