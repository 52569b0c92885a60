package durable

import (
	"context"
	"errors"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// Delivery is a message received from a Queue, leased to its receiver
// until Deadline. Exactly one of Ack, Retry and Settle should follow;
// Extend lengthens the lease of a long task.
//
// The embedded Message carries the message's Kind, MaxAttempts and
// Timeout as enqueued. A MaxAttempts above 0 replaces the queue's
// (WithMaxAttempts) in every decision of death: Retry, Run's, and the
// reap of an expired lease. A Timeout above 0 bounds the attempt: Run's
// handler gets a ctx that ends Timeout after the hand-out, with
// context.DeadlineExceeded; a consumer of Receive gets the same ctx from
// AttemptContext. The lease is not bound to it: a handler that does not
// return keeps it (see Run).
type Delivery struct {
	Message
	// Attempt is 1 on the first delivery of the message, 2 on the second,
	// and so on.
	Attempt int
	// Deadline is when the lease expires, on the queue's clock. After it
	// the message may be delivered again, to this receiver or another.
	Deadline time.Time
	// LastError is the text of the previous failed attempt's error (see
	// RetryWithError), LeaseExpired if its lease expired, "" on the
	// first attempt.
	LastError string

	token     uint64
	q         *Queue
	dueAt     time.Time // when it may be handed out, on the queue's clock
	handedOut time.Time // when it was, on the queue's clock (see deliver)
	ahead     bool      // claimed ahead: to be confirmed before it is handed out
	held      bool      // claimed ahead and held by Run, on a short lease (see HeldLease)
	revoked   bool      // replaced or cancelled while held (under q.mu)
}

func (q *Queue) delivery(storeNow time.Time, l store.Lease) *Delivery {
	now := q.clock.Now()
	ready := l.Ready
	if ready.IsZero() { // a store that does not say: the due time
		ready = l.Due
	}
	return &Delivery{
		Message:   l.Message,
		Attempt:   l.Attempt,
		Deadline:  q.local(now, storeNow, l.Deadline),
		LastError: l.LastError,
		token:     l.Token,
		q:         q,
		dueAt:     q.local(now, storeNow, ready),
		ahead:     l.Ahead,
	}
}

// Ack deletes the message: it has been handled. Once Ack returns nil the
// deletion is in the store, and the message never comes back. If the
// lease was lost, Ack returns ErrLeaseLost and deletes nothing: the
// message was replaced by an Enqueue, or the lease expired. A queue
// reaps an expired lease at its deadline (the message is then pending
// again, after the back-off, or dead), so an Ack after Deadline returns
// ErrLeaseLost unless it reaches the store before any queue on it has
// reaped the lease; use Extend for a task that may run longer.
//
// Errors: nil means deleted for good. ErrLeaseLost and ErrClosed mean
// nothing was deleted. Any other error (a timeout, a connection lost,
// io.ErrUnexpectedEOF) means the Ack may have been written: an Ack that
// returned "unexpected EOF" because the connection broke after the server
// committed has deleted the message. Retrying the Ack is safe: a retry of
// an Ack that was written returns ErrLeaseLost (the lease is gone with the
// message), which after such an error means "acked, or lost": either way
// the message is not this delivery's any more. An Ack that was not
// written leaves the message to come back when its lease expires (at
// least once).
func (d *Delivery) Ack(ctx context.Context) error {
	err := d.q.call(func() error { return d.q.store.Ack(ctx, d.ref()) })
	d.observeResult(EventAcked, err)
	d.q.storeError(OpAck, d, err)
	return err
}

// observeResult reports to the queue's observer an operation on d that
// succeeded as kind, or found its lease lost.
func (d *Delivery) observeResult(kind EventKind, err error) {
	switch {
	case err == nil:
		d.q.observe(Event{Kind: kind, ID: d.ID, MessageKind: d.Kind, Attempt: d.Attempt})
	case errors.Is(err, ErrLeaseLost):
		d.q.observe(Event{Kind: EventLeaseLost, ID: d.ID, MessageKind: d.Kind, Attempt: d.Attempt})
	}
}

// Retry reports that this attempt failed. The message is delivered again
// after the delay after, or, if after is zero or less, after the queue's
// back-off for this attempt; or it goes to the dead letters if this was
// its last attempt (its MaxAttempts, or if it has none the queue's,
// WithMaxAttempts). It returns ErrLeaseLost, changing
// nothing, if the lease was lost. The message keeps the LastError it had;
// RetryWithError replaces it.
//
// Errors (RetryWithError's too): nil means written. ErrLeaseLost and
// ErrClosed mean nothing was written. Any other error (a timeout, a
// connection lost) means the Retry may or may not have been written. A
// retry of the Retry is safe: if the first was written, the second finds
// the lease ended and returns ErrLeaseLost, changing nothing (it does not
// count a second failure); if not, it writes it. Left alone, a Retry
// that was not written has the same effect later: the lease expires and
// the message comes back after the back-off.
func (d *Delivery) Retry(ctx context.Context, after time.Duration) error {
	return d.RetryWithError(ctx, after, nil)
}

// RetryWithError is Retry, keeping the text of cause with the message: the
// next attempt's Delivery.LastError and Queue.Get's Info.LastError show
// it, cut to MaxErrorLen bytes. A nil cause keeps the text the message
// had, as Retry does.
func (d *Delivery) RetryWithError(ctx context.Context, after time.Duration, cause error) error {
	dead := d.Attempt >= d.maxAttempts()
	if after <= 0 && !dead {
		after = d.q.cfg.backoff(d.Attempt)
	}
	return d.fail(ctx, after, dead, errorText(cause), "durable: message died after its last attempt")
}

// maxAttempts is the number of attempts after which d's message dies: its
// own MaxAttempts if it has one, else the queue's.
func (d *Delivery) maxAttempts() int {
	if d.MaxAttempts > 0 {
		return d.MaxAttempts
	}
	return d.q.cfg.maxAttempts
}

// fail ends d's lease after a failed attempt: the message dies (logged as
// died), or is due again after after, with the error text text ("" keeps
// the one it had).
func (d *Delivery) fail(ctx context.Context, after time.Duration, dead bool, text, died string) error {
	q := d.q
	err := q.call(func() error {
		return q.store.Retry(ctx, store.RetryParams{Lease: d.ref(), After: after, Dead: dead, Error: text, Retention: q.cfg.retention})
	})
	if err != nil {
		d.observeResult(EventRetried, err)
		q.storeError(OpRetry, d, err)
		return err
	}
	if dead {
		d.observeResult(EventDead, nil)
		q.log.Info(died, "id", d.ID, "kind", d.Kind, "attempts", d.Attempt, "err", text)
		return nil
	}
	d.observeResult(EventRetried, nil)
	q.wakeAt(q.clock.Now().Add(after))
	return nil
}

// Settle ends the delivery as Run does after its handler returned err, for
// a consumer that calls Receive and a handler itself (a Mux's Handle, say):
//
//   - nil: Ack.
//   - a Permanent error, or one wrapping ErrPermanent: the message goes to
//     the dead letters now, with err's text as its LastError.
//   - a Snooze(after) error, wrapped or not: the message is due again
//     after after, with its Attempt and LastError as they were before
//     this delivery (the attempt does not count); EventSnoozed.
//   - any other error: RetryWithError(ctx, 0, err): due again after the
//     back-off, or dead if this was the last attempt.
//
// Its errors are those of Ack and Retry: ErrLeaseLost, changing nothing,
// if the lease was lost.
func (d *Delivery) Settle(ctx context.Context, err error) error {
	if err == nil {
		return d.Ack(ctx)
	}
	return d.settleFailure(ctx, err)
}

// settleFailure is Settle for a non-nil err.
func (d *Delivery) settleFailure(ctx context.Context, err error) error {
	if errors.Is(err, ErrPermanent) {
		return d.fail(ctx, 0, true, errorText(err), "durable: message died at once of a permanent error")
	}
	if after, ok := snoozedFor(err); ok {
		return d.snooze(ctx, after)
	}
	return d.RetryWithError(ctx, 0, err)
}

// snooze ends d's lease without counting its attempt (RetryParams.Unhanded):
// the message is due again after after, its LastError kept.
func (d *Delivery) snooze(ctx context.Context, after time.Duration) error {
	q := d.q
	err := q.call(func() error {
		return q.store.Retry(ctx, store.RetryParams{Lease: d.ref(), After: after, Unhanded: true})
	})
	d.observeResult(EventSnoozed, err)
	if err != nil {
		q.storeError(OpRetry, d, err)
		return err
	}
	q.wakeAt(q.clock.Now().Add(after))
	return nil
}

// AttemptContext returns a ctx for the handling of d: parent, ending
// Timeout after d was handed out, on the queue's clock, with
// context.DeadlineExceeded, if the message has a Timeout. Run gives its
// handler this ctx; a consumer of Receive calls it itself, and calls
// cancel when done, as with context.WithDeadline. It is for a Delivery
// a Queue returned.
func (d *Delivery) AttemptContext(parent context.Context) (ctx context.Context, cancel context.CancelFunc) {
	if d.Timeout <= 0 {
		return context.WithCancel(parent)
	}
	return d.q.clock.WithDeadline(parent, d.handedOut.Add(d.Timeout))
}

// timedOut reports whether d's Timeout has passed, on the queue's clock.
func (d *Delivery) timedOut() bool {
	return d.Timeout > 0 && !d.q.clock.Now().Before(d.handedOut.Add(d.Timeout))
}

// Extend makes the lease end by from now, for a task that needs longer
// than the visibility timeout. It returns ErrLeaseLost, changing nothing,
// if the lease was lost.
func (d *Delivery) Extend(ctx context.Context, by time.Duration) error {
	deadline, err := d.extend(ctx, by)
	if err != nil {
		return err
	}
	d.Deadline = deadline
	return nil
}

// extend is Extend without the write to d.Deadline, for Run's lease
// keeper, which extends while the handler may read d. It returns the new
// deadline.
func (d *Delivery) extend(ctx context.Context, by time.Duration) (time.Time, error) {
	deadline, err := d.extendUnseen(ctx, by)
	if errors.Is(err, ErrLeaseLost) {
		d.observeResult(EventLeaseLost, err)
	}
	return deadline, err
}

// extendUnseen is extend for a delivery no handler has seen (Run's hand-out
// of a message it held): a lease lost then is no EventLeaseLost, which
// speaks of a lease lost under a handler.
func (d *Delivery) extendUnseen(ctx context.Context, by time.Duration) (time.Time, error) {
	q := d.q
	if err := q.call(func() error { return q.store.Extend(ctx, store.ExtendParams{Lease: d.ref(), By: by}) }); err != nil {
		q.storeError(OpExtend, d, err)
		return time.Time{}, err
	}
	now := q.clock.Now()
	// A shorter lease must be reaped at its new deadline.
	q.mu.Lock()
	if !q.closed {
		armLocked(q.reap, &q.reapAt, now.Add(max(by, 0)))
	}
	q.mu.Unlock()
	return now.Add(by), nil
}

// ref names the delivery's lease, for the store.
func (d *Delivery) ref() store.LeaseRef { return store.LeaseRef{ID: d.ID, Token: d.token} }
