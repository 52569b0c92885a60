package memstore_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/memstore"
)

// A queue on a store in memory, as a test of a consumer would use it:
// no file, no server, and a mock clock that makes the minute pass at
// once.
func Example() {
	mock := clock.NewMock()
	s := memstore.New(mock)
	defer s.Close()
	q, err := durable.New(s, durable.WithClock(mock))
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()
	ctx := context.Background()

	if err := q.Enqueue(ctx, durable.Message{ID: "reminder-1", Payload: []byte("pay order 1"), Due: mock.Now().Add(time.Minute)}); err != nil {
		log.Fatal(err)
	}
	st, _ := q.Stats(ctx)
	fmt.Println("pending:", st.Pending)

	mock.Add(time.Minute)
	d, err := q.Receive(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %s (attempt %d)\n", d.ID, d.Payload, d.Attempt)
	if err := d.Ack(ctx); err != nil {
		log.Fatal(err)
	}
	st, _ = q.Stats(ctx)
	fmt.Println("pending:", st.Pending, "in flight:", st.InFlight)
	// Output:
	// pending: 1
	// reminder-1: pay order 1 (attempt 1)
	// pending: 0 in flight: 0
}
