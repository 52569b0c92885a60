package durable

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// Receiving: claiming due messages (some ahead of their due time, for
// Receive or held by Run) and handing each out at its due time.

// claimAhead is how early Receive claims a message: a write to the
// store, with its fsync, takes from a fraction of a millisecond to tens of
// them on a busy disk, and claiming ahead keeps that out of the lateness.
// The message is handed out at its due time, never before. A process that
// dies in the meantime uses none of the message's attempts: its lease,
// never confirmed, is reaped as held (store.ExpiredLease.Held), with its
// attempt taken back.
const claimAhead = 50 * time.Millisecond // the default of config.claimAhead

// Receive waits until a message is due, leases it for the visibility
// timeout and returns it. Ack the delivery once it is handled, or Retry it.
//
// Receive returns ctx.Err() when ctx ends and ErrClosed when the queue is
// closed. A store error, such as a server that is down, does not end it:
// it logs the error, reports it to the Observer (EventStoreError), and
// tries again with a back-off (from 10ms to 1s), and mentions the last
// error if ctx then ends. ErrCorrupt ends it, and so does an error
// wrapping ErrClosed from the store (a store, pool or client closed: it
// cannot come back). Each claim and confirmation is bounded by
// WithStoreTimeout.
//
// Receive claims a message up to 50ms before its due time and holds it
// until then (see claimAhead). Once it holds one it returns it at its due
// time even if ctx ends meanwhile, so that no lease is left unused: it
// may thus return up to 50ms after ctx ends. If the queue is closed
// meanwhile, the message goes back to the store, due as before. At the
// due time it confirms the lease with the store (Store.Confirm): if an
// Enqueue or Cancel of the message, in any process, came first, it does
// not return the message and claims another. If the confirmation fails
// otherwise (the store is down), it does not return the message either,
// which comes back when its lease expires.
//
// While the queue is paused (see Pause), Receive waits: a claim leases
// nothing, and a message claimed ahead before the pause goes back to the
// store at its due time instead of being returned. A Resume wakes it.
//
// The delivery carries its message's Kind, MaxAttempts and Timeout. What
// Run does with them is the consumer's to do: Delivery.AttemptContext
// gives the ctx that ends at the Timeout, a Mux's Handle routes by Kind,
// and Delivery.Settle ends the delivery by a handler's error as Run does
// (Permanent, Snooze); Retry and RetryWithError apply MaxAttempts
// themselves.
func (q *Queue) Receive(ctx context.Context) (*Delivery, error) {
	for {
		ds, err := q.claimDue(ctx, func() (int, int) { return 1, 0 })
		if err != nil {
			return nil, err
		}
		d, err := q.deliver(ds[0])
		if errors.Is(err, errRevoked) {
			continue
		}
		return d, err
	}
}

// claimDue waits until messages are due and claims up to n of them, where
// n, held = want() (asked before each claim; n is 1 or more), earliest
// first: the first n-held for receivers waiting now, each on a lease of
// the visibility timeout; the last held (0 to n) for later: those due
// already handed out by the claim, on the same lease, and those claimed
// ahead held (see Store.Claim), on a short lease (see HeldLease), for
// Run to keep alive while they wait (runner.hold) and to confirm with a
// lease of the visibility timeout when it hands them out (handOut). One
// claim, one store write, for all. It returns at least one, each to be
// handed out with deliver. Once the store leased them it returns them
// even if ctx ended meanwhile: a lease taken is handed out. Its errors
// are Receive's.
func (q *Queue) claimDue(ctx context.Context, want func() (n, held int)) ([]*Delivery, error) {
	var lastErr error
	for failures := 0; ; {
		if err := q.enterClaim(); err != nil {
			return nil, err
		}
		n, held := want()
		held = min(max(held, 0), n)
		var heldLease time.Duration
		if held > 0 {
			heldLease = q.cfg.heldLease()
		}
		cctx, cancel := context.WithTimeout(ctx, q.cfg.callTimeout())
		c, err := q.store.Claim(cctx, store.ClaimParams{Limit: n, Held: held, Lease: q.cfg.visibility,
			HeldLease: heldLease, Ahead: q.cfg.claimAhead})
		cancel()
		q.claimDone()
		if err == nil {
			failures, lastErr = 0, nil
			q.setPaused(c.Paused)
			q.schedule(c.Now, c.NextDue, c.NextDeadline, c.DueSoon)
			if len(c.Leases) > 0 {
				ds := make([]*Delivery, len(c.Leases))
				for i, l := range c.Leases {
					ds[i] = q.delivery(c.Now, l)
					ds[i].held = l.Ahead && i >= n-held
				}
				return ds, nil
			}
			if err := q.await(ctx); err != nil {
				return nil, err
			}
			continue
		}
		if ctx.Err() != nil {
			return nil, ctxError(ctx, lastErr)
		}
		q.storeError(OpClaim, nil, err)
		if errors.Is(err, ErrClosed) || errors.Is(err, ErrCorrupt) {
			// The store cannot come back (it, or its pool or client, was
			// closed), or is damaged: retrying would only hide it.
			return nil, err
		}
		failures++
		lastErr = err
		delay := retryDelay(failures)
		q.log.Warn("durable: claim failed; receiving again later", "err", err, "attempt", failures, "after", delay)
		if err := q.sleep(ctx, delay); err != nil {
			return nil, ctxError(ctx, lastErr)
		}
	}
}

// deliver hands d out (see handOut), notes when (the start of its
// Timeout) and reports the delivery to the observer.
func (q *Queue) deliver(d *Delivery) (*Delivery, error) {
	d, err := q.handOut(d)
	if err == nil {
		d.handedOut = q.clock.Now()
		q.observe(Event{Kind: EventDelivered, ID: d.ID, MessageKind: d.Kind, Attempt: d.Attempt, Lateness: d.handedOut.Sub(d.Due)})
	}
	return d, err
}

// errRevoked is handOut's error for a message replaced or cancelled while
// it was held: Receive claims another.
var errRevoked = errors.New("durable: held message replaced or cancelled")

// handOut returns d at its due time, d.dueAt on the queue's clock. While
// it waits, d is in q.ahead: an Enqueue or Cancel of its ID in this
// process revokes it, and Close gives it back to the store. A message
// claimed ahead or held is then confirmed with the store (Store.Confirm),
// which fails if an Enqueue or Cancel of any process took it back
// meanwhile; one held on a short lease gets the visibility timeout's in
// the same write.
func (q *Queue) handOut(d *Delivery) (*Delivery, error) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		q.release(d)
		return nil, ErrClosed
	}
	if d.dueAt.After(q.clock.Now()) {
		q.ahead[d.ID] = d
		q.waiting++
		q.mu.Unlock()

		ready := make(chan struct{})
		t := q.wheel.AfterFuncAt(d.dueAt, func() { close(ready) })
		select {
		case <-ready:
		case <-q.done:
		}
		t.Stop()

		q.mu.Lock()
		q.waiting--
		if q.ahead[d.ID] == d {
			delete(q.ahead, d.ID)
		}
		switch {
		case d.revoked:
			q.mu.Unlock()
			return nil, errRevoked
		case q.closed: // Close released it
			q.mu.Unlock()
			return nil, ErrClosed
		}
	}
	if !d.ahead {
		q.mu.Unlock()
		return d, nil
	}
	q.active.Add(1) // Close waits for the confirmation
	q.mu.Unlock()
	var by time.Duration
	if d.held {
		// Held on a short lease: the confirmation gives it the lease of
		// a hand-out, in the same write.
		by = q.cfg.visibility
	}
	ctx, cancel := context.WithTimeout(context.Background(), q.cfg.callTimeout())
	err := q.store.Confirm(ctx, store.ConfirmParams{Lease: d.ref(), By: by})
	cancel()
	q.active.Done()
	switch {
	case err == nil:
		if by > 0 {
			d.Deadline = q.clock.Now().Add(by)
			d.held = false
		}
		return d, nil
	case errors.Is(err, ErrPaused):
		// Paused since the claim: the message goes back, due as before,
		// and the next claim finds the queue paused.
		q.release(d)
		return nil, errRevoked
	case !errors.Is(err, ErrLeaseLost):
		// Whether it was taken back is unknown: it is not handed out,
		// and comes back when its lease expires.
		q.storeError(OpConfirm, d, err)
		q.log.Warn("durable: confirming a message claimed ahead failed; it comes back when its lease expires",
			"id", d.ID, "err", err)
	}
	return nil, errRevoked
}

// heldAhead returns the deliveries this process holds ahead of the IDs of
// msgs, by ID: nil if it holds none (it usually holds none, and then
// nothing is allocated). One lock for a whole batch.
func (q *Queue) heldAhead(msgs []Message) map[string]*Delivery {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.ahead) == 0 {
		return nil
	}
	var held map[string]*Delivery
	for i := range msgs {
		if d := q.ahead[msgs[i].ID]; d != nil {
			if held == nil {
				held = make(map[string]*Delivery)
			}
			held[msgs[i].ID] = d
		}
	}
	return held
}

// revokeIfHeld takes each delivery of held, held before a write that took
// its message back in the store, from the Receive that holds it, if it
// still does. A delivery claimed after the write is left alone: it is the
// new version.
func (q *Queue) revokeIfHeld(held map[string]*Delivery) {
	if len(held) == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for id, d := range held {
		if q.ahead[id] == d {
			d.revoked = true
			delete(q.ahead, id)
		}
	}
}

// release gives back to the store a message claimed ahead and not handed
// out, pending at its due time again, with the attempt its claim counted
// taken back (RetryParams.Unhanded).
func (q *Queue) release(d *Delivery) {
	after := max(d.dueAt.Sub(q.clock.Now()), 0)
	ctx, cancel := context.WithTimeout(context.Background(), q.cfg.callTimeout())
	defer cancel()
	if err := q.store.Retry(ctx, store.RetryParams{Lease: d.ref(), After: after, Unhanded: true}); err != nil &&
		!errors.Is(err, ErrLeaseLost) {
		q.storeError(OpRelease, d, err)
		q.log.Warn("durable: giving back a message claimed ahead failed; its lease will expire", "id", d.ID, "err", err)
	}
}

func ctxError(ctx context.Context, last error) error {
	if last == nil {
		return ctx.Err()
	}
	return fmt.Errorf("%w (last store error: %v)", ctx.Err(), last)
}

// retryDelay is the wait after the nth store failure in a row: doubling
// from 10ms up to 1s, with equal jitter so that receivers spread out.
func retryDelay(n int) time.Duration {
	d := time.Second
	if n < 8 {
		d = min(10*time.Millisecond<<(n-1), time.Second)
	}
	return d/2 + rand.N(d/2+1)
}

// sleep waits d on the queue's clock, unless ctx ends or the queue closes.
func (q *Queue) sleep(ctx context.Context, d time.Duration) error {
	t := q.wheel.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-q.done:
		return ErrClosed
	}
}
