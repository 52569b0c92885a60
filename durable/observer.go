package durable

import "time"

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
	}
	return "unknown"
}

// Event is one thing a Queue did, for an Observer.
type Event struct {
	Kind EventKind
	// ID is the message's ID, or "" for an event about several (a reap).
	ID string
	// N is how many messages the event is about: 1 but for a reap.
	N int
	// Attempt is the delivery's attempt number, where there is one.
	Attempt int
	// Lateness is set on EventDelivered, Duration on EventHandled.
	Lateness, Duration time.Duration
	// Err is set on EventHandled when the handler failed, and on
	// EventScheduleConflict.
	Err error
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
