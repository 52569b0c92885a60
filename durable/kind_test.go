package durable

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type order struct {
	ID     string `json:"id"`
	Amount int    `json:"amount"`
}

func TestNewKindPanicsOnAnInvalidName(t *testing.T) {
	for name, kind := range map[string]string{
		"empty": "", "too long": strings.Repeat("k", MaxKindLen+1), "not UTF-8": "order.\xff",
	} {
		assert.Panics(t, func() { NewKind[order](kind) }, name)
	}
	assert.Equal(t, strings.Repeat("é", MaxKindLen/2), NewKind[order](strings.Repeat("é", MaxKindLen/2)).Name(),
		"MaxKindLen bytes")
}

func TestKindMessage(t *testing.T) {
	due := time.Date(2026, 11, 22, 12, 30, 0, 0, time.UTC)
	m, err := NewKind[order]("order.close").Message("o-1", order{ID: "o-1", Amount: 42}, due)
	require.NoError(t, err)
	assert.Equal(t, Message{ID: "o-1", Kind: "order.close", Payload: []byte(`{"id":"o-1","amount":42}`), Due: due}, m)

	_, err = Kind[order]{}.Message("o-1", order{}, due)
	require.ErrorIs(t, err, ErrInvalidMessage, "the zero Kind")
	_, err = NewKind[order]("order.close").Message("", order{}, due)
	require.ErrorIs(t, err, ErrInvalidMessage, "an empty ID")
	_, err = NewKind[string]("big").Message("b", strings.Repeat("x", MaxPayloadLen), due)
	require.ErrorIs(t, err, ErrInvalidMessage, "a payload over MaxPayloadLen")
	_, err = NewKind[chan int]("chan").Message("c", make(chan int), due)
	var unsupported *json.UnsupportedTypeError
	require.ErrorAs(t, err, &unsupported, "a value that does not encode")
}

func TestMuxPanics(t *testing.T) {
	ok := func(context.Context, *Delivery) error { return nil }
	kind := NewKind[order]("order.close")
	for name, f := range map[string]func(m *Mux){
		"HandleFunc twice": func(m *Mux) { m.HandleFunc("a", ok); m.HandleFunc("a", ok) },
		"Register twice": func(m *Mux) {
			Register(m, kind, func(context.Context, *Delivery, order) error { return nil })
			Register(m, kind, func(context.Context, *Delivery, order) error { return nil })
		},
		"Register of a kind HandleFunc registered": func(m *Mux) {
			m.HandleFunc(kind.Name(), ok)
			Register(m, kind, func(context.Context, *Delivery, order) error { return nil })
		},
		"HandleFunc of a nil handler": func(m *Mux) { m.HandleFunc("a", nil) },
		"HandleFunc of a long kind":   func(m *Mux) { m.HandleFunc(strings.Repeat("k", MaxKindLen+1), ok) },
		"HandleFunc of a non-UTF-8":   func(m *Mux) { m.HandleFunc("\xff", ok) },
		"Register of the zero Kind": func(m *Mux) {
			Register(m, Kind[order]{}, func(context.Context, *Delivery, order) error { return nil })
		},
		"Register of a nil handler": func(m *Mux) { Register[order](m, kind, nil) },
	} {
		assert.Panics(t, func() { f(NewMux()) }, name)
	}
}

func TestMuxRoutes(t *testing.T) {
	var m Mux // the zero Mux is ready to use
	ctx := context.Background()
	var got []string
	m.HandleFunc("", func(_ context.Context, d *Delivery) error { got = append(got, "no kind: "+d.ID); return nil })
	Register(&m, NewKind[order]("order.close"), func(_ context.Context, d *Delivery, o order) error {
		got = append(got, fmt.Sprintf("close %s: %s %d", d.ID, o.ID, o.Amount))
		return nil
	})
	require.NoError(t, m.Handle(ctx, &Delivery{Message: Message{ID: "old"}}))
	require.NoError(t, m.Handle(ctx, &Delivery{Message: Message{ID: "c", Kind: "order.close", Payload: []byte(`{"id":"o","amount":3}`)}}))
	assert.Equal(t, []string{"no kind: old", "close c: o 3"}, got)

	err := m.Handle(ctx, &Delivery{Message: Message{ID: "x", Kind: "invoice.send"}})
	require.ErrorIs(t, err, ErrNoHandler)
	require.ErrorIs(t, err, ErrPermanent)
	assert.Equal(t, `durable: no handler for kind "invoice.send"`, err.Error())

	err = m.Handle(ctx, &Delivery{Message: Message{ID: "c", Kind: "order.close", Payload: []byte("nope")}})
	require.ErrorIs(t, err, ErrBadPayload)
	require.ErrorIs(t, err, ErrPermanent)
	var syntax *json.SyntaxError
	require.ErrorAs(t, err, &syntax, "the decoding error")
	assert.Equal(t, "durable: the payload does not decode into durable.order: "+syntax.Error(), err.Error())
	assert.Len(t, got, 2, "the handler did not run")

	assert.ErrorIs(t, (&Mux{}).Handle(ctx, &Delivery{}), ErrNoHandler, "an empty Mux")
}

// TestMuxHandleAllocates checks the hot path: Handle makes no allocation
// for a handler of HandleFunc, and none beyond the JSON decoding for one
// of Register.
func TestMuxHandleAllocates(t *testing.T) {
	m := NewMux()
	for i := range 50 {
		m.HandleFunc(fmt.Sprint("kind-", i), func(context.Context, *Delivery) error { return nil })
	}
	Register(m, NewKind[order]("order.close"), func(context.Context, *Delivery, order) error { return nil })
	ctx := context.Background()
	plain := &Delivery{Message: Message{ID: "p", Kind: "kind-7"}}
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = m.Handle(ctx, plain) }), "HandleFunc's handler")

	payload := []byte(`{"id":"o-1","amount":42}`)
	decoded := &Delivery{Message: Message{ID: "o", Kind: "order.close", Payload: payload}}
	decode := testing.AllocsPerRun(100, func() {
		var o order
		_ = json.Unmarshal(payload, &o)
	})
	assert.Equal(t, decode, testing.AllocsPerRun(100, func() { _ = m.Handle(ctx, decoded) }),
		"Register's handler: the JSON decoding's allocations, no more")
}
