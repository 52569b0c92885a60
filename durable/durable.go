// Package durable is a delay queue whose messages outlive the process:
// messages are kept in a Store (by default an embedded bbolt file, see
// Open), delivered at least once at or after their due time, and leased
// to one consumer at a time until it acks them.
//
// The life of a message:
//
//	Enqueue ──▶ pending ──(due)──▶ in flight ──Ack──▶ gone
//	               ▲                  │
//	               └──Retry / lease───┘──(attempts used up)──▶ dead ──Requeue──▶ pending
//	                  expiry + back-off
//
// Receive blocks until a message is due and leases it for the visibility
// timeout (WithVisibilityTimeout), counted from the due time. It takes the
// lease up to 50ms before the due time, so that the store's write (an
// fsync) is done by then, and hands the message out at its due time,
// once the store has confirmed that no Enqueue or Cancel, of any process,
// took it back meanwhile (Store.Confirm): until it is handed out, an
// Enqueue of its ID replaces it and a Cancel deletes it. The consumer
// acks the delivery when done; if it fails it calls Retry, and if it dies
// or stalls the lease
// expires. Either way the message is delivered again after a back-off
// (WithBackoff), with Attempt one higher, until WithMaxAttempts attempts
// have failed: then it is moved to the dead letters, where DeadLetters
// lists it and Requeue brings it back. Get shows what the queue holds
// of one message (its state, attempts, the text of its last failure,
// when it was enqueued), and List pages through the messages of a state
// in order, with a cursor.
//
// Every claim of a message gets a new fencing token. Ack, Retry and
// Extend name the token of their delivery, so a consumer whose lease was
// lost (it expired and the message went to someone else, or the message
// was replaced by an Enqueue of the same ID) gets ErrLeaseLost and
// changes nothing.
//
// The queue does not poll. It asks the store for the earliest due time and
// the earliest lease deadline, and arms a timer of a timing wheel for each;
// Receive wakes when one fires, or when an Enqueue in this process (or, for
// a store shared by processes, a notification) brings an earlier message.
// Each such wake-up wakes one waiting receiver, which wakes the next if
// its claim finds more messages due.
// Only those two instants are held in memory, and the message each
// Receive has claimed ahead, whatever the number of messages in the store.
package durable

import (
	"errors"
	"fmt"
	"time"
)

// Limits on messages. Enqueue rejects a message beyond them with an error
// wrapping ErrInvalidMessage, and writes nothing.
const (
	// MaxIDLen is the longest message ID, in bytes.
	MaxIDLen = 512
	// MaxPayloadLen is the largest payload, in bytes (1 MiB).
	MaxPayloadLen = 1 << 20
)

var (
	// ErrClosed is returned by the methods of a Queue or a Store that has
	// been closed.
	ErrClosed = errors.New("durable: queue closed")
	// ErrLeaseLost is returned by Ack, Retry and Extend when the delivery's
	// lease is no longer held: it expired and a queue reaped it (the
	// message is pending again, or dead, or was delivered again), or the
	// message was replaced or acked meanwhile. Nothing is changed.
	ErrLeaseLost = errors.New("durable: lease lost")
	// ErrInFlight is returned by Cancel for a message that is being
	// delivered: ack it, or let its lease expire, instead.
	ErrInFlight = errors.New("durable: message in flight")
	// ErrPaused is returned by Store.Confirm for a lease claimed ahead
	// while the queue is paused (see Queue.Pause): the message is not
	// handed out, and its holder gives it back.
	ErrPaused = errors.New("durable: queue paused")
	// ErrNotFound is returned by Requeue when there is no dead message
	// with the given ID, and wrapped by the error of Get when there is no
	// message with the given ID.
	ErrNotFound = errors.New("durable: no such message")
	// ErrInvalidMessage is wrapped by the error Enqueue returns for a
	// message that breaks a limit: an empty or too long ID, or a too large
	// payload.
	ErrInvalidMessage = errors.New("durable: invalid message")
	// ErrLocked is returned by Open when another open queue, in this
	// process or another, holds the file.
	ErrLocked = errors.New("durable: file is held by another open queue")
	// ErrCorrupt is returned when the store's file is damaged.
	ErrCorrupt = errors.New("durable: store file is corrupt")
)

// Message is a message of the queue.
type Message struct {
	// ID identifies the message: enqueueing an ID that is already held
	// replaces that message. It must be 1 to MaxIDLen bytes long.
	ID string
	// Payload is the message's body, at most MaxPayloadLen bytes.
	Payload []byte
	// Due is the earliest time the message may be delivered. The zero time
	// means now.
	Due time.Time
}

// Validate reports whether m is within the limits, with an error wrapping
// ErrInvalidMessage if not. Stores call it before writing anything.
func (m *Message) Validate() error {
	switch {
	case m.ID == "":
		return fmt.Errorf("%w: empty ID", ErrInvalidMessage)
	case len(m.ID) > MaxIDLen:
		return fmt.Errorf("%w: ID is %d bytes, more than MaxIDLen (%d)", ErrInvalidMessage, len(m.ID), MaxIDLen)
	case len(m.Payload) > MaxPayloadLen:
		return fmt.Errorf("%w: payload of %q is %d bytes, more than MaxPayloadLen (%d)", ErrInvalidMessage, m.ID, len(m.Payload), MaxPayloadLen)
	}
	return nil
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
	// Paused says whether the queue is paused (see Queue.Pause).
	Paused bool
}
