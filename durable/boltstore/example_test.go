package boltstore_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/boltstore"
)

// A queue on a file store opened by hand, as durable.Open does it in one
// call: the store on a mock clock, so that the output does not depend on
// the time, and the queue on the same clock. The message is on disk when
// Enqueue returns, in one commit.
func Example() {
	dir, err := os.MkdirTemp("", "boltstore")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	mock := clock.NewMock()
	s, err := boltstore.Open(filepath.Join(dir, "orders.db"), boltstore.WithClock(mock))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	q, err := durable.New(s, durable.WithClock(mock))
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close() // before s.Close: a queue does not close its store
	ctx := context.Background()

	err = q.Enqueue(ctx, durable.Message{ID: "order-1", Payload: []byte(`{"amount":42}`), Due: mock.Now().Add(30 * time.Minute)})
	if err != nil {
		log.Fatal(err)
	}
	info, err := q.Get(ctx, "order-1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %s, due in %v, %s\n", info.ID, info.State, info.Due.Sub(mock.Now()), info.Payload)
	fmt.Println("commits:", s.Commits())
	// Output:
	// order-1: pending, due in 30m0s, {"amount":42}
	// commits: 1
}
