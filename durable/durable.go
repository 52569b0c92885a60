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
// A message may name its Kind, the sort of job it is: a Kind[T] makes
// the messages of one kind with a payload of type T, JSON-encoded, and a
// Mux routes each delivery to the handler of its kind (Register), which
// gets the payload decoded. A message may also carry its own MaxAttempts,
// which replaces the queue's, and a Timeout, which bounds each attempt.
// A handler's error may say that the message is to die now (Permanent)
// or to come back later without counting the attempt (Snooze).
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

import "github.com/seed64e23a5c/timingwheel/durable/store"

// Limits on messages (see store.Message.Validate). Enqueue rejects a
// message beyond them with an error wrapping ErrInvalidMessage, and
// writes nothing.
const (
	// MaxIDLen is the longest message ID, in bytes.
	MaxIDLen = store.MaxIDLen
	// MaxPayloadLen is the largest payload, in bytes (1 MiB).
	MaxPayloadLen = store.MaxPayloadLen
)

// The errors of a queue. They are the store package's, so that a queue
// returns what its store returned as it is.
var (
	// ErrClosed is returned by the methods of a Queue or a Store that has
	// been closed.
	ErrClosed = store.ErrClosed
	// ErrLeaseLost is returned by Ack, Retry and Extend when the delivery's
	// lease is no longer held: it expired and a queue reaped it (the
	// message is pending again, or dead, or was delivered again), or the
	// message was replaced or acked meanwhile. Nothing is changed.
	ErrLeaseLost = store.ErrLeaseLost
	// ErrInFlight is returned by Cancel for a message that is being
	// delivered: ack it, or let its lease expire, instead.
	ErrInFlight = store.ErrInFlight
	// ErrPaused is returned by a store's Confirm for a lease claimed ahead
	// while the queue is paused (see Queue.Pause).
	ErrPaused = store.ErrPaused
	// ErrNotFound is returned by Requeue when there is no dead message
	// with the given ID, and wrapped by the error of Get when there is no
	// message with the given ID.
	ErrNotFound = store.ErrNotFound
	// ErrInvalidMessage is wrapped by the error Enqueue returns for a
	// message that breaks a limit (an empty or too long ID, a too large
	// payload, a due time outside the range stores keep) or a batch with
	// two messages of one ID.
	ErrInvalidMessage = store.ErrInvalidMessage
	// ErrInvalidCursor is wrapped by the error List returns for a cursor
	// it did not make for the same state.
	ErrInvalidCursor = store.ErrInvalidCursor
)

// Message is a message of the queue: its ID, Payload and Due (see
// store.Message).
type Message = store.Message

// Stats counts the messages of a queue (see store.Stats).
type Stats = store.Stats
