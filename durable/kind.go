package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// Kinds of jobs: a Kind names one sort of job and the Go type of its
// payload, and a Mux routes each delivery to the handler of its Kind.
//
//	closeOrder := durable.NewKind[Order]("order.close")
//	mux := durable.NewMux()
//	durable.Register(mux, closeOrder, func(ctx context.Context, d *durable.Delivery, o Order) error { ... })
//	m, err := closeOrder.Message("order-1", Order{ID: "order-1"}, due)
//	err = q.Enqueue(ctx, m)
//	err = q.Run(ctx, 8, mux.Handle)

// MaxKindLen is the longest kind name, in bytes.
const MaxKindLen = store.MaxKindLen

// A Kind names one sort of job and the Go type of its payload (JSON-encoded).
// Its Message makes the messages of the kind, and Register routes them, in a
// Mux, to a handler that gets the payload decoded. Make one with NewKind;
// the zero Kind has no name, and Register and Message refuse it.
type Kind[T any] struct {
	name string
}

// NewKind returns the Kind named name, whose payloads are the JSON of a T.
// It panics if name is not a valid kind, 1 to MaxKindLen bytes of UTF-8,
// as regexp.MustCompile does on a bad pattern: kinds are constants of a
// program, made once at its start.
func NewKind[T any](name string) Kind[T] {
	if name == "" {
		panic("durable: NewKind with an empty name")
	}
	if err := checkKind(name); err != nil {
		panic(err)
	}
	return Kind[T]{name: name}
}

// Name returns the kind's name, the Kind of its messages.
func (k Kind[T]) Name() string { return k.name }

// Message returns the message of this kind with ID id, due at due (now if
// zero), whose payload is the JSON encoding of v. Its MaxAttempts and
// Timeout are 0 (the queue's, and none): set them on the result. It
// returns an error if v does not encode, if the message breaks a limit
// (wrapping ErrInvalidMessage: an invalid ID, a payload over
// MaxPayloadLen), or for the zero Kind.
func (k Kind[T]) Message(id string, v T, due time.Time) (Message, error) {
	if k.name == "" {
		return Message{}, fmt.Errorf("%w: message %q of the zero Kind (use NewKind)", ErrInvalidMessage, id)
	}
	payload, err := json.Marshal(v)
	if err != nil {
		return Message{}, fmt.Errorf("durable: the payload of %q (kind %q): %w", id, k.name, err)
	}
	m := Message{ID: id, Kind: k.name, Payload: payload, Due: due}
	if err := m.Validate(); err != nil {
		return Message{}, err
	}
	return m, nil
}

// checkKind reports whether a non-empty kind is within the limits of
// store.Message.Kind.
func checkKind(kind string) error {
	switch {
	case len(kind) > MaxKindLen:
		return fmt.Errorf("durable: a kind of %d bytes, more than MaxKindLen (%d)", len(kind), MaxKindLen)
	case !utf8.ValidString(kind):
		return fmt.Errorf("durable: kind %q is not valid UTF-8", kind)
	}
	return nil
}

// Errors of a Mux's handlers, found in the LastError of the messages they
// send to the dead letters.
var (
	// ErrNoHandler is wrapped by the error of Mux.Handle for a delivery
	// whose Kind has no handler in the Mux. The error is Permanent: the
	// message goes to the dead letters at once, with the LastError
	// `durable: no handler for kind "<kind>"`. Once the kind has a handler,
	// Requeue brings it back.
	ErrNoHandler = errors.New("durable: no handler for kind")
	// ErrBadPayload is wrapped by the error of a handler of Register for a
	// payload that does not decode into the kind's type, with the
	// decoding error. The error is Permanent: the message goes to the
	// dead letters at once.
	ErrBadPayload = errors.New("durable: the payload does not decode")
)

// A Mux routes deliveries to handlers by Kind: Handle calls the handler
// registered for the delivery's Kind (with Register or HandleFunc). Give
// its Handle to Run:
//
//	err := q.Run(ctx, 8, mux.Handle)
//
// A delivery whose Kind has no handler goes to the dead letters at once,
// its LastError saying `durable: no handler for kind "<kind>"` (see
// ErrNoHandler); a message without a Kind goes there too unless
// HandleFunc("", h) gave one to such messages. Requeue brings a message
// back once its kind has a handler.
//
// Handlers are usually all registered before Run starts, but a Mux is
// safe for concurrent use: a handler registered while Handle runs serves
// the deliveries that come after it. Registering a kind twice panics, as
// http.ServeMux does for a pattern. The zero Mux is empty and ready to
// use.
type Mux struct {
	mu sync.Mutex // orders the registrations
	// handlers, by kind, is replaced whole by each registration (copy on
	// write), so that Handle reads it with one atomic load and one map
	// lookup, and no lock.
	handlers atomic.Pointer[map[string]Handler]
}

// NewMux returns an empty Mux.
func NewMux() *Mux { return &Mux{} }

// HandleFunc registers h as the handler of the deliveries of kind, which
// gets them as they are (see Register for one that decodes the payload).
// The kind "" is that of the messages enqueued without a Kind. It panics
// if kind has a handler already, if h is nil, or if kind is longer than
// MaxKindLen bytes or is not UTF-8.
func (m *Mux) HandleFunc(kind string, h Handler) {
	if h == nil {
		panic(fmt.Sprintf("durable: Mux.HandleFunc(%q) with a nil handler", kind))
	}
	if err := checkKind(kind); err != nil {
		panic(err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var old map[string]Handler
	if p := m.handlers.Load(); p != nil {
		old = *p
	}
	if _, dup := old[kind]; dup {
		panic(fmt.Sprintf("durable: kind %q registered twice in a Mux", kind))
	}
	next := make(map[string]Handler, len(old)+1)
	for k, h := range old {
		next[k] = h
	}
	next[kind] = h
	m.handlers.Store(&next)
}

// Register registers h in m as the handler of k's deliveries, which gets
// each payload decoded from JSON into a T. A payload that does not decode
// is an error wrapping ErrBadPayload and the decoding error, Permanent:
// the message goes to the dead letters at once, as retrying it would not
// make it decode. h's own error is as any Handler's: nil acks, an error
// retries (see Snooze and Permanent for the others). It panics as
// HandleFunc does, and for the zero Kind.
func Register[T any](m *Mux, k Kind[T], h func(ctx context.Context, d *Delivery, v T) error) {
	if k.name == "" {
		panic("durable: Register of the zero Kind (use NewKind)")
	}
	if h == nil {
		panic(fmt.Sprintf("durable: Register(%q) with a nil handler", k.name))
	}
	m.HandleFunc(k.name, func(ctx context.Context, d *Delivery) error {
		var v T
		if err := json.Unmarshal(d.Payload, &v); err != nil {
			return Permanent(fmt.Errorf("%w into %T: %w", ErrBadPayload, v, err))
		}
		return h(ctx, d, v)
	})
}

// Handle calls the handler of d's Kind, and returns its error. For a Kind
// with no handler it returns a Permanent error wrapping ErrNoHandler. It
// is a Handler, for Run; a consumer that calls Receive can call it too,
// and end the delivery with Delivery.Settle.
func (m *Mux) Handle(ctx context.Context, d *Delivery) error {
	if p := m.handlers.Load(); p != nil {
		if h, ok := (*p)[d.Kind]; ok {
			return h(ctx, d)
		}
	}
	return Permanent(fmt.Errorf("%w %q", ErrNoHandler, d.Kind))
}
