package store_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/seed64e23a5c/timingwheel/durable/memstore"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// A store driven by hand, as a queue drives it: a batch validated, then
// enqueued; a claim that leases what is due, with a fencing token; an
// ack that names the lease, and a second ack of it that finds it lost.
// Here on the store in memory (package durable/memstore); every store
// answers alike.
func Example() {
	mock := clock.NewMock()
	var s store.Store = memstore.New(mock)
	defer s.Close()
	ctx := context.Background()

	batch := []store.Message{
		{ID: "a", Payload: []byte("now")},
		{ID: "b", Payload: []byte("in an hour"), Due: mock.Now().Add(time.Hour)},
	}
	if err := store.ValidateBatch(batch); err != nil {
		log.Fatal(err)
	}
	if err := s.Enqueue(ctx, batch); err != nil {
		log.Fatal(err)
	}

	c, err := s.Claim(ctx, store.ClaimParams{Limit: 10, Lease: 30 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	for _, l := range c.Leases {
		fmt.Printf("leased %s (%s), attempt %d, lease of %v\n", l.ID, l.Payload, l.Attempt, l.Deadline.Sub(c.Now))
	}
	fmt.Println("next due in", c.NextDue.Sub(c.Now))

	l := c.Leases[0]
	fmt.Println("ack:", s.Ack(ctx, l.Ref()))
	err = s.Ack(ctx, l.Ref())
	fmt.Println("ack again, lease lost:", errors.Is(err, store.ErrLeaseLost))

	st, err := s.Stats(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("pending", st.Pending, "in flight", st.InFlight, "dead", st.Dead)
	// Output:
	// leased a (now), attempt 1, lease of 30s
	// next due in 1h0m0s
	// ack: <nil>
	// ack again, lease lost: true
	// pending 1 in flight 0 dead 0
}

// A batch that holds an ID twice is refused whole, before any store sees
// it, as is one with an invalid message.
func ExampleValidateBatch() {
	err := store.ValidateBatch([]store.Message{{ID: "order-1"}, {ID: "order-2"}, {ID: "order-1"}})
	fmt.Println(err)
	fmt.Println(errors.Is(err, store.ErrInvalidMessage))

	err = store.ValidateBatch([]store.Message{{ID: "order-1"}, {ID: ""}})
	fmt.Println(err)
	fmt.Println(store.ValidateBatch([]store.Message{{ID: "order-1"}, {ID: "order-2"}}))
	// Output:
	// durable: invalid message: messages 0 and 2 of the batch have the same ID "order-1"
	// true
	// message 1 of the batch: durable: invalid message: empty ID
	// <nil>
}

// Every store makes the cursors of List with String and reads them with
// ParseCursor: a position in the order of one state, which reads back
// as it was made, and not as a cursor of another state.
func ExampleCursor() {
	c := store.Cursor{State: store.Pending, At: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC), Seq: 7}
	s := c.String()
	fmt.Println(s)

	back, err := store.ParseCursor(store.Pending, s)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(back.At.UTC(), back.Seq)

	_, err = store.ParseCursor(store.Dead, s)
	fmt.Println(errors.Is(err, store.ErrInvalidCursor))
	// Output:
	// p98ea5c38afec80000000000000000007
	// 2026-11-22 12:00:00 +0000 UTC 7
	// true
}
