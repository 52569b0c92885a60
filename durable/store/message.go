package store

import (
	"fmt"
	"time"
	"unicode/utf8"
)

// Limits on messages (see Message.Validate).
const (
	// MaxIDLen is the longest message ID, in bytes.
	MaxIDLen = 512
	// MaxPayloadLen is the largest payload, in bytes (1 MiB).
	MaxPayloadLen = 1 << 20
	// MaxKindLen is the longest Kind, in bytes.
	MaxKindLen = 128
	// MaxMaxAttempts is the largest MaxAttempts of a message.
	MaxMaxAttempts = 1<<31 - 1
)

// Message is a message of a queue.
type Message struct {
	// ID identifies the message: enqueueing an ID that is already held
	// replaces that message. It must be 1 to MaxIDLen bytes long.
	ID string
	// Kind names the sort of job the message is, to route it (see
	// durable.Mux): "" for none, else 1 to MaxKindLen bytes of UTF-8.
	Kind string
	// Payload is the message's body, at most MaxPayloadLen bytes.
	Payload []byte
	// Due is the earliest time the message may be delivered, within
	// [MinTime, MaxTime]. The zero time means now.
	Due time.Time
	// MaxAttempts is how many attempts the message gets before it dies,
	// 0 to MaxMaxAttempts: 0 leaves it to the queue (WithMaxAttempts).
	MaxAttempts int
	// Timeout, if positive, bounds each attempt: the handler's ctx ends
	// this long after the hand-out. 0 is none; it is never negative.
	Timeout time.Duration
}

// Validate reports whether m is within the limits (its ID, Kind and
// payload, its Due within the time range, MaxAttempts and Timeout not
// negative), with an error wrapping
// ErrInvalidMessage if not.
func (m *Message) Validate() error {
	switch {
	case m.ID == "":
		return fmt.Errorf("%w: empty ID", ErrInvalidMessage)
	case len(m.ID) > MaxIDLen:
		return fmt.Errorf("%w: ID is %d bytes, more than MaxIDLen (%d)", ErrInvalidMessage, len(m.ID), MaxIDLen)
	case len(m.Payload) > MaxPayloadLen:
		return fmt.Errorf("%w: payload of %q is %d bytes, more than MaxPayloadLen (%d)", ErrInvalidMessage, m.ID, len(m.Payload), MaxPayloadLen)
	case len(m.Kind) > MaxKindLen:
		return fmt.Errorf("%w: kind of %q is %d bytes, more than MaxKindLen (%d)", ErrInvalidMessage, m.ID, len(m.Kind), MaxKindLen)
	case !utf8.ValidString(m.Kind):
		return fmt.Errorf("%w: kind of %q is not valid UTF-8", ErrInvalidMessage, m.ID)
	case m.MaxAttempts < 0 || m.MaxAttempts > MaxMaxAttempts:
		return fmt.Errorf("%w: MaxAttempts of %q is %d, want 0 (the queue's) to %d", ErrInvalidMessage, m.ID, m.MaxAttempts, MaxMaxAttempts)
	case m.Timeout < 0:
		return fmt.Errorf("%w: Timeout of %q is %v, want 0 (none) or more", ErrInvalidMessage, m.ID, m.Timeout)
	}
	if err := CheckTime(m.Due); err != nil {
		return fmt.Errorf("%w: due time of %q: %v", ErrInvalidMessage, m.ID, err)
	}
	return nil
}

// ValidateBatch is the one rule of what may be enqueued: each message of
// msgs is valid (Message.Validate), and no ID appears twice. A batch that
// breaks it is refused whole, with an error wrapping ErrInvalidMessage.
// The queue's Enqueue calls it, and so does every store's own way of
// enqueueing outside a queue (such as pgstore's EnqueueTx), so that a
// batch is refused or taken alike by both.
func ValidateBatch(msgs []Message) error {
	var seen map[string]int
	if len(msgs) > 1 {
		seen = make(map[string]int, len(msgs))
	}
	for i := range msgs {
		if err := msgs[i].Validate(); err != nil {
			if len(msgs) == 1 {
				return err
			}
			return fmt.Errorf("message %d of the batch: %w", i, err)
		}
		if seen == nil {
			continue
		}
		if j, dup := seen[msgs[i].ID]; dup {
			return fmt.Errorf("%w: messages %d and %d of the batch have the same ID %q", ErrInvalidMessage, j, i, msgs[i].ID)
		}
		seen[msgs[i].ID] = i
	}
	return nil
}
