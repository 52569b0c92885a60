package durable_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// Run is the way to consume a queue: it receives, calls the handler, keeps
// the lease alive while the handler runs, and acks or retries by the
// handler's result.
func ExampleQueue_Run() {
	dir, err := os.MkdirTemp("", "orders")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// A back-off of 10ms, so that the example's retry comes at once.
	q, err := durable.Open(filepath.Join(dir, "orders.db"),
		durable.WithBackoff(func(int) time.Duration { return 10 * time.Millisecond }))
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	for _, id := range []string{"order-1", "order-2"} {
		if err := q.Enqueue(ctx, durable.Message{ID: id, Due: time.Now()}); err != nil {
			log.Fatal(err)
		}
	}

	closed := 0
	err = q.Run(ctx, 1, func(ctx context.Context, d *durable.Delivery) error {
		if d.ID == "order-2" && d.Attempt == 1 {
			fmt.Println("order-2: the payment service did not answer")
			return errors.New("payment service unavailable") // retried after the back-off
		}
		fmt.Printf("closed %s on attempt %d\n", d.ID, d.Attempt)
		if closed++; closed == 2 {
			stop() // Run returns once this handler has returned
		}
		return nil // acked
	})
	fmt.Println("Run returned:", err)
	// Output:
	// closed order-1 on attempt 1
	// order-2: the payment service did not answer
	// closed order-2 on attempt 2
	// Run returned: <nil>
}
