package store

import "errors"

// The errors of a store. A store returns them, or errors wrapping them,
// as each method says; the queue returns them to its users as they are.
var (
	// ErrClosed is returned by the methods of a store (and of a queue)
	// that has been closed.
	ErrClosed = errors.New("durable: queue closed")
	// ErrLeaseLost is returned by Confirm, Ack, Retry and Extend when the
	// lease they name is no longer held: it expired and was reaped, or the
	// message was replaced, cancelled or acked meanwhile. Nothing is
	// changed.
	ErrLeaseLost = errors.New("durable: lease lost")
	// ErrInFlight is returned by Cancel for a message that is in flight
	// and handed out.
	ErrInFlight = errors.New("durable: message in flight")
	// ErrPaused is returned by Confirm for a lease claimed ahead while
	// the queue is paused (see Pauser): the message is not handed out, and
	// its holder gives it back.
	ErrPaused = errors.New("durable: queue paused")
	// ErrNotFound is returned by Requeue when there is no dead message
	// with the given ID, and wrapped by the errors of Get and
	// SeriesKeeper.Series when there is nothing under the name.
	ErrNotFound = errors.New("durable: no such message")
	// ErrInvalidMessage is wrapped by the error of ValidateBatch for a
	// batch that breaks a limit (see Message.Validate) or holds an ID
	// twice.
	ErrInvalidMessage = errors.New("durable: invalid message")
	// ErrInvalidCursor is wrapped by the error List returns for a cursor
	// it did not make for the same state.
	ErrInvalidCursor = errors.New("durable: invalid cursor")
	// ErrSeriesUnsupported is wrapped by the error of the queue's
	// Schedule on a store that is not a SeriesKeeper, and by the errors of
	// the methods of a SeriesKeeper that cannot keep series as it is
	// configured (Redis Cluster with several shards).
	ErrSeriesUnsupported = errors.New("durable: the store cannot keep series in this configuration")
	// ErrPauseUnsupported is wrapped by the error of the queue's Pause and
	// Resume on a store that is not a Pauser.
	ErrPauseUnsupported = errors.New("durable: the store cannot pause its queue")
)
