package durable_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// Orders are enqueued to be closed in 30 minutes unless paid; a paid
// order's message is cancelled; a consumer closes the others. The mock
// clock makes the half hour pass at once.
func Example() {
	dir, err := os.MkdirTemp("", "orders")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	mock := clock.NewMock()
	q, err := durable.Open(filepath.Join(dir, "orders.db"), durable.WithClock(mock))
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()
	ctx := context.Background()

	for _, id := range []string{"order-1", "order-2", "order-3"} {
		err := q.Enqueue(ctx, durable.Message{ID: id, Payload: []byte(`{"amount":42}`), Due: mock.Now().Add(30 * time.Minute)})
		if err != nil {
			log.Fatal(err)
		}
	}
	// order-2 is paid: it must not be closed.
	if _, err := q.Cancel(ctx, "order-2"); err != nil {
		log.Fatal(err)
	}

	mock.Add(30 * time.Minute)
	for range 2 {
		d, err := q.Receive(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("closing unpaid %s (attempt %d)\n", d.ID, d.Attempt)
		if err := d.Ack(ctx); err != nil {
			log.Fatal(err)
		}
	}
	st, _ := q.Stats(ctx)
	fmt.Printf("pending %d, in flight %d, dead %d\n", st.Pending, st.InFlight, st.Dead)
	// Output:
	// closing unpaid order-1 (attempt 1)
	// closing unpaid order-3 (attempt 1)
	// pending 0, in flight 0, dead 0
}

// A message whose every attempt fails goes to the dead letters, from which
// Requeue brings it back once the cause is fixed.
func ExampleDelivery_Retry() {
	dir, err := os.MkdirTemp("", "retry")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	mock := clock.NewMock()
	q, err := durable.Open(filepath.Join(dir, "q.db"), durable.WithClock(mock),
		durable.WithMaxAttempts(3),
		durable.WithBackoff(func(attempt int) time.Duration { return time.Duration(attempt) * time.Minute }))
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()
	ctx := context.Background()

	if err := q.Enqueue(ctx, durable.Message{ID: "callback-7", Payload: []byte("https://example.com/hook")}); err != nil {
		log.Fatal(err)
	}
	for {
		d, err := q.Receive(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("attempt %d of %s fails\n", d.Attempt, d.ID)
		if err := d.Retry(ctx, 0); err != nil { // the back-off: attempt minutes
			log.Fatal(err)
		}
		if d.Attempt == 3 {
			break
		}
		mock.Add(time.Duration(d.Attempt) * time.Minute)
	}
	dead, err := q.DeadLetters(ctx, 10)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("dead:", dead[0].ID)

	if err := q.Requeue(ctx, "callback-7", time.Time{}); err != nil {
		log.Fatal(err)
	}
	d, err := q.Receive(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("requeued: attempt %d of %s succeeds\n", d.Attempt, d.ID)
	if err := d.Ack(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// attempt 1 of callback-7 fails
	// attempt 2 of callback-7 fails
	// attempt 3 of callback-7 fails
	// dead: callback-7
	// requeued: attempt 1 of callback-7 succeeds
}

// Dead letters are kept up to a count and an age: here the last two.
func ExampleWithDeadLetterRetention() {
	dir, err := os.MkdirTemp("", "retention")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	q, err := durable.Open(filepath.Join(dir, "q.db"),
		durable.WithMaxAttempts(1), durable.WithDeadLetterRetention(2, 24*time.Hour))
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()
	ctx := context.Background()
	for _, id := range []string{"a", "b", "c"} {
		if err := q.Enqueue(ctx, durable.Message{ID: id}); err != nil {
			log.Fatal(err)
		}
		d, err := q.Receive(ctx)
		if err != nil {
			log.Fatal(err)
		}
		if err := d.Retry(ctx, 0); err != nil { // its only attempt: it dies
			log.Fatal(err)
		}
	}
	dead, err := q.DeadLetters(ctx, 10)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range dead {
		fmt.Println("dead:", m.ID)
	}
	// Output:
	// dead: b
	// dead: c
}
