package durable

import (
	"errors"
	"time"
)

// EventKind says what happened in an Event.
type EventKind int

// The kinds of Event.
const (
	// EventEnqueued: Enqueue wrote a message (a new one or a replacement).
	EventEnqueued EventKind = iota + 1
	// EventDelivered: Receive handed a message out. Attempt and Lateness
	// (how long after its due time, on the queue's clock) are set.
	EventDelivered
	// EventAcked: an Ack deleted a message.
	EventAcked
	// EventRetried: N messages are to be delivered again after a failed
	// attempt: a Retry (Attempt is set), or leases that expired (the reap).
	EventRetried
	// EventDead: N messages went to the dead letters after their last
	// attempt.
	EventDead
	// EventLeaseLost: an Ack, Retry or Extend found its lease lost. Run
	// reports a lease lost under a handler once: it does not Ack or Retry
	// after its lease keeper found the lease lost.
	EventLeaseLost
	// EventHandled: a handler of Run returned. Duration and Err (nil on
	// success, the handler's error or panic otherwise) are set.
	EventHandled
	// EventScheduleConflict: this queue stopped taking part in the series
	// ID, rewritten with another Schedule by a later Schedule call (see
	// Queue.Schedule). Err wraps ErrScheduleConflict.
	EventScheduleConflict
	// EventStoreError: a store call the queue made for itself failed, and
	// the queue tries again with a back-off (or, for ErrClosed and
	// ErrCorrupt, Run and Receive return it). Op names the call (one of
	// the Op constants), Err is its error, and ID and Attempt are set for
	// a call about one delivery. A lease found lost (EventLeaseLost) and a
	// confirmation refused by a pause are answers, not failures, and give
	// no such event.
	EventStoreError
	// EventSnoozed: a handler snoozed its delivery (see Snooze): the
	// message is due again later, its attempt not counted. Attempt is
	// set.
	EventSnoozed
)

// The operations of EventStoreError: which of the queue's own store calls
// failed.
const (
	OpClaim   = "claim"   // a claim of Run or Receive
	OpConfirm = "confirm" // the confirmation of a message claimed ahead or held
	OpAck     = "ack"     // an Ack (Run's, or Delivery.Ack)
	OpRetry   = "retry"   // a Retry (Run's after a failed handler, or Delivery.Retry)
	OpExtend  = "extend"  // an extension of a lease (Run's lease keeper, or Delivery.Extend)
	OpRelease = "release" // giving back a message claimed and not handed out
	OpReap    = "reap"    // the reap of expired leases
	OpSeries  = "series"  // a step of a series (Queue.Schedule)
)

// String returns the kind's name, as "delivered".
func (k EventKind) String() string {
	switch k {
	case EventEnqueued:
		return "enqueued"
	case EventDelivered:
		return "delivered"
	case EventAcked:
		return "acked"
	case EventRetried:
		return "retried"
	case EventDead:
		return "dead"
	case EventLeaseLost:
		return "lease lost"
	case EventHandled:
		return "handled"
	case EventScheduleConflict:
		return "schedule conflict"
	case EventStoreError:
		return "store error"
	case EventSnoozed:
		return "snoozed"
	}
	return "unknown"
}

// Event is one thing a Queue did, for an Observer.
type Event struct {
	Kind EventKind
	// ID is the message's ID, or "" for an event about several (a reap).
	ID string
	// MessageKind is the message's Kind (see Message.Kind), on every
	// event with an ID but EventScheduleConflict and a series'
	// EventStoreError (whose ID names the series): "" for a message
	// without one, and for an event about several messages (a reap,
	// whose store does not say their kinds).
	MessageKind string
	// N is how many messages the event is about: 1 but for a reap.
	N int
	// Attempt is the delivery's attempt number, where there is one.
	Attempt int
	// Lateness is set on EventDelivered, Duration on EventHandled.
	Lateness, Duration time.Duration
	// Err is set on EventHandled when the handler failed, and on
	// EventScheduleConflict and EventStoreError.
	Err error
	// Op is set on EventStoreError: the store call that failed (OpClaim,
	// OpAck, ...).
	Op string
}

// Observer hears what a Queue does, for metrics (package durableotel
// turns the events into OpenTelemetry metrics). Observe is called on the
// goroutine that did the thing, after it is done, so it must be quick and
// safe for concurrent use.
type Observer interface {
	Observe(Event)
}

// ObserverFunc is a function that is an Observer: ObserverFunc(f).Observe(e)
// calls f(e).
type ObserverFunc func(Event)

// Observe calls f(e).
func (f ObserverFunc) Observe(e Event) { f(e) }

// WithObserver makes the queue report what it does to o. By default
// nothing is reported.
func WithObserver(o Observer) Option { return func(c *config) { c.observer = o } }

// observe reports e to the queue's observer, if it has one.
func (q *Queue) observe(e Event) {
	if q.cfg.observer != nil {
		if e.N == 0 {
			e.N = 1
		}
		q.cfg.observer.Observe(e)
	}
}

// storeError reports a failed store call of the queue's to the observer:
// op on the delivery d (nil for none). Answers (a lease lost, a pause)
// are not failures, nor is ErrClosed once the queue itself is closed.
func (q *Queue) storeError(op string, d *Delivery, err error) {
	if d == nil {
		q.storeFailure(Event{Op: op, Err: err})
		return
	}
	q.storeFailure(Event{Op: op, ID: d.ID, MessageKind: d.Kind, Attempt: d.Attempt, Err: err})
}

// storeFailure reports e, an EventStoreError with its Op, Err and what it
// is about, as storeError does.
func (q *Queue) storeFailure(e Event) {
	switch err := e.Err; {
	case err == nil, errors.Is(err, ErrLeaseLost), errors.Is(err, ErrPaused):
		return
	case errors.Is(err, ErrClosed) && q.ctx.Err() != nil:
		return
	}
	e.Kind = EventStoreError
	q.observe(e)
}
