package durable

import (
	"errors"
	"fmt"
	"time"
)

// What a handler's error may say beyond "this attempt failed": that no
// retry can mend it (Permanent), or that the message is to come back
// later, the attempt not counted (Snooze). Run and Delivery.Settle act on
// them.

// ErrPermanent is the error a Permanent error matches (errors.Is): a
// handler may also return an error that wraps it, as
// fmt.Errorf("order %s does not exist: %w", id, durable.ErrPermanent).
var ErrPermanent = errors.New("durable: permanent failure")

// Permanent returns err marked as one that no retry can mend. A handler
// that returns it, wrapped or not, sends its message to the dead letters
// at once, whatever attempts it has left, with err's text as its
// LastError (ErrPermanent's for a nil err). Requeue brings it back. The
// result matches ErrPermanent and unwraps to err.
func Permanent(err error) error { return &permanentError{err: err} }

type permanentError struct{ err error }

func (e *permanentError) Error() string {
	if e.err == nil {
		return ErrPermanent.Error()
	}
	return e.err.Error()
}

func (e *permanentError) Unwrap() error        { return e.err }
func (e *permanentError) Is(target error) bool { return target == ErrPermanent }

// Snooze returns an error that, returned by a handler (wrapped or not),
// brings its message back after d without counting the attempt: the next
// delivery has the same Attempt and LastError as this one, and the
// message's MaxAttempts is not used up by snoozing (a handler that always
// snoozes keeps its message forever). A Snooze with d <= 0 is an
// ordinary error, retried after the back-off like any other; and a
// Permanent one wins over a Snooze it wraps.
func Snooze(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("durable: Snooze(%v): the delay must be positive", d)
	}
	return &snoozeError{after: d}
}

type snoozeError struct{ after time.Duration }

func (e *snoozeError) Error() string { return fmt.Sprintf("durable: snoozed for %v", e.after) }

// snoozedFor returns the delay of the Snooze err is or wraps, if any.
func snoozedFor(err error) (time.Duration, bool) {
	var s *snoozeError
	if errors.As(err, &s) {
		return s.after, true
	}
	return 0, false
}
