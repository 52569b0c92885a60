package durable

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// State is the state a message is in (see Store).
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

// valid reports whether s is one of the three states.
func (s State) valid() bool { return s >= Pending && s <= Dead }

// ErrInvalidCursor is wrapped by the error List returns for a cursor it
// did not make for the same state.
var ErrInvalidCursor = errors.New("durable: invalid cursor")

// MaxErrorLen is the most bytes of an attempt's error text a store keeps
// (Info.LastError, Delivery.LastError): a longer text is cut to it, at a
// UTF-8 character boundary.
const MaxErrorLen = 4 << 10

// LeaseExpired is the LastError of a message whose lease expired: its
// consumer neither acked nor retried it in time (it crashed, or stalled).
const LeaseExpired = "lease expired"

// Info is what a queue holds for one message. All times are on the
// store's clock (for Redis, Redis's TIME, to the microsecond).
type Info struct {
	// ID and Payload are the message's.
	ID      string
	Payload []byte
	// State is Pending, InFlight or Dead.
	State State
	// Due is when a pending message falls due; the zero time in the other
	// states.
	Due time.Time
	// Attempt counts the attempts made so far: 0 before the first
	// delivery, and 1 while the first delivery is in flight. A claim counts
	// as an attempt even when the message goes back unhandled (claimed
	// ahead or held by a queue that was closed, or by a Run whose ctx
	// ended). Enqueue and Requeue set it back to 0.
	Attempt int
	// LastError is the text of the last failed attempt's error (the
	// error a Handler of Run returned or panicked with, or the one given
	// to Delivery.RetryWithError), at most MaxErrorLen bytes, or
	// LeaseExpired if the last attempt's lease expired. A failure without
	// a text (Delivery.Retry) keeps the text before it. It is "" if no
	// attempt failed with a text since the message was last enqueued or
	// requeued.
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

// Get returns what the queue holds under id, or an error wrapping
// ErrNotFound.
func (q *Queue) Get(ctx context.Context, id string) (Info, error) {
	var info Info
	err := q.call(func() (err error) {
		info, err = q.store.Get(ctx, id)
		return err
	})
	return info, err
}

// List returns up to limit messages in state s, in order (pending by due
// time; in flight by lease deadline; dead by time of death), starting
// after cursor ("" for the first page), and the cursor of the next page
// ("" at the end).
//
// Pages are read one at a time, each atomic on its own: a message that
// changes state between two pages may be listed twice or not at all, but
// a message that stays in s is listed exactly once, in order, however
// the others move (see the store's List for what order means with
// shards). A cursor is only for List with the same s: another s, or a
// string List did not return, fails with an error wrapping
// ErrInvalidCursor. It returns an error for a limit below 1 or an
// invalid s.
func (q *Queue) List(ctx context.Context, s State, cursor string, limit int) ([]Info, string, error) {
	switch {
	case !s.valid():
		return nil, "", fmt.Errorf("durable: List of an invalid state %v", s)
	case limit < 1:
		return nil, "", fmt.Errorf("durable: List limit must be positive, got %d", limit)
	}
	var (
		infos []Info
		next  string
	)
	err := q.call(func() (err error) {
		infos, next, err = q.store.List(ctx, s, cursor, limit)
		return err
	})
	return infos, next, err
}

// errorText is the text a store keeps for err: "" for nil, and at most
// MaxErrorLen bytes.
func errorText(err error) string {
	if err == nil {
		return ""
	}
	return TruncateErrorText(err.Error())
}

// TruncateErrorText cuts s to MaxErrorLen bytes, at a UTF-8 character
// boundary. A Queue calls it on an error's text before it gives the text
// to Store.Retry, which keeps what it is given.
func TruncateErrorText(s string) string {
	if len(s) <= MaxErrorLen {
		return s
	}
	cut := MaxErrorLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
