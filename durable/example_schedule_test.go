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

// Close the day's unpaid orders at 02:00 (UTC): every process of the
// service calls Schedule with the same name at start, and whichever
// receives the message closes them, once a day in all. The mock clock
// makes the night pass at once.
func ExampleQueue_Schedule() {
	dir, err := os.MkdirTemp("", "orders")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	mock := clock.NewMock()
	mock.Set(time.Date(2026, 11, 22, 15, 0, 0, 0, time.UTC))
	q, err := durable.Open(filepath.Join(dir, "orders.db"), durable.WithClock(mock))
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()
	ctx := context.Background()

	nightly, err := durable.Cron("0 2 * * *")
	if err != nil {
		log.Fatal(err)
	}
	if err := q.Schedule(ctx, "close-unpaid", nightly, []byte("close the day's unpaid orders")); err != nil {
		log.Fatal(err)
	}
	schedules, err := q.Schedules(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range schedules {
		fmt.Printf("%s: next message due %v\n", s.Name, s.Last.UTC())
	}

	mock.Set(time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC))
	d, err := q.Receive(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %s\n", d.ID, d.Payload)
	if err := d.Ack(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// close-unpaid: next message due 2026-11-23 02:00:00 +0000 UTC
	// close-unpaid@2026-11-23T02:00:00Z: close the day's unpaid orders
}
