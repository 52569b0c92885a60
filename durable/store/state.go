package store

import (
	"fmt"
	"time"
)

// State is the state a message is in (see the package doc).
type State int

// The states of a message. The zero State is none of them.
const (
	// Pending messages wait for their due time, or for a consumer.
	Pending State = iota + 1
	// InFlight messages are leased to a consumer.
	InFlight
	// Dead messages used up their attempts; Requeue brings one back.
	Dead
)

// String returns "pending", "in-flight" or "dead", or "State(n)" for a
// value that is none of them.
func (s State) String() string {
	switch s {
	case Pending:
		return "pending"
	case InFlight:
		return "in-flight"
	case Dead:
		return "dead"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Valid reports whether s is one of the three states.
func (s State) Valid() bool { return s >= Pending && s <= Dead }

// Info is what a queue holds for one message. All times are on the
// store's clock (for Redis, Redis's TIME, to the microsecond).
type Info struct {
	// ID, Kind and Payload are the message's, and so are MaxAttempts and
	// Timeout (see Message).
	ID          string
	Kind        string
	Payload     []byte
	MaxAttempts int
	Timeout     time.Duration
	// State is Pending, InFlight or Dead.
	State State
	// Due is when a pending message falls due; the zero time in the other
	// states.
	Due time.Time
	// Attempt counts the attempts made so far: 0 before the first
	// delivery, and 1 while the first delivery is in flight. A claim counts
	// as an attempt even when the message goes back unhandled (claimed
	// ahead by a queue that was closed, or by a Run whose ctx ended). Enqueue and Requeue set it back to 0.
	Attempt int
	// LastError is the text of the last failed attempt's error, at most
	// MaxErrorLen bytes, as the queue gave it to Retry. A failure without
	// a text keeps the text before it. It is "" if no attempt failed with
	// a text since the message was last enqueued or requeued.
	LastError string
	// EnqueuedAt is when the message was first enqueued: an Enqueue that
	// replaces a message of the same ID keeps it, and so do retries and
	// Requeue. It is the zero time for a message written by a version
	// that did not keep it (a bbolt record of version 1, a Redis message
	// without it), until an Enqueue replaces it.
	EnqueuedAt time.Time
	// Deadline is when the lease of an in-flight message ends; the zero
	// time in the other states.
	Deadline time.Time
	// DiedAt is when a dead message died; the zero time in the other
	// states.
	DiedAt time.Time
}

// Stats counts the messages of a queue.
type Stats struct {
	// Pending counts the messages waiting for their due time or for a
	// consumer, InFlight those leased to a consumer, and Dead the dead
	// letters.
	Pending, InFlight, Dead int
	// NextDue is the due time of the earliest pending message, or the zero
	// time if none is pending.
	NextDue time.Time
	// Paused says whether the queue is paused (see Pauser); always false
	// for a store that is not a Pauser.
	Paused bool
}
