package durable_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/memstore"
)

// Order is the payload of the example's kinds.
type Order struct {
	ID     string  `json:"id"`
	Amount float64 `json:"amount"`
}

// Two kinds of jobs, each with its handler, which gets the payload
// decoded: Run routes the deliveries through the Mux. A message of a kind
// the Mux does not know goes to the dead letters at once.
func ExampleRegister() {
	q, err := durable.New(memstore.New(nil)) // or durable.Open(path), a Redis, a PostgreSQL...
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()
	// Run runs until the last handler stops it (or, should the example
	// go wrong, for 10s at most).
	ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()

	closeOrder := durable.NewKind[Order]("order.close")
	remind := durable.NewKind[Order]("order.remind")
	mux := durable.NewMux()
	durable.Register(mux, remind, func(ctx context.Context, d *durable.Delivery, o Order) error {
		fmt.Printf("reminding %s: %.2f to pay\n", o.ID, o.Amount)
		return nil
	})
	durable.Register(mux, closeOrder, func(ctx context.Context, d *durable.Delivery, o Order) error {
		fmt.Printf("closing %s\n", o.ID)
		stop() // the last message of the example: Run returns once this handler has
		return nil
	})

	now := time.Now()
	o := Order{ID: "order-1", Amount: 42.5}
	r, err := remind.Message("order-1/remind", o, now.Add(-2*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	c, err := closeOrder.Message("order-1/close", o, now)
	if err != nil {
		log.Fatal(err)
	}
	stray := durable.Message{ID: "invoice-9", Kind: "invoice.send", Due: now.Add(-time.Second)}
	if err := q.Enqueue(ctx, r, stray, c); err != nil {
		log.Fatal(err)
	}
	if err := q.Run(ctx, 1, mux.Handle); err != nil {
		log.Fatal(err)
	}
	dead, _, err := q.List(context.Background(), durable.Dead, "", 10)
	if err != nil {
		log.Fatal(err)
	}
	for _, info := range dead {
		fmt.Printf("dead: %s after %d attempt: %s\n", info.ID, info.Attempt, info.LastError)
	}
	// Output:
	// reminding order-1: 42.50 to pay
	// closing order-1
	// dead: invoice-9 after 1 attempt: durable: no handler for kind "invoice.send"
}

// A handler that cannot do its job yet snoozes: the message comes back
// after the delay, with the same attempt number, which snoozing does not
// use up. Here a consumer of Receive ends its deliveries as Run would,
// with Settle.
func ExampleSnooze() {
	mock := clock.NewMock()
	q, err := durable.New(memstore.New(mock), durable.WithClock(mock))
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()
	ctx := context.Background()
	if err := q.Enqueue(ctx, durable.Message{ID: "payout-7", Kind: "payout", Due: mock.Now()}); err != nil {
		log.Fatal(err)
	}
	bankOpen := false
	handle := func(ctx context.Context, d *durable.Delivery) error {
		if !bankOpen {
			fmt.Printf("attempt %d of %s: the bank is closed, back in an hour\n", d.Attempt, d.ID)
			return durable.Snooze(time.Hour)
		}
		fmt.Printf("attempt %d of %s: paid\n", d.Attempt, d.ID)
		return nil
	}
	for range 2 {
		d, err := q.Receive(ctx)
		if err != nil {
			log.Fatal(err)
		}
		if err := d.Settle(ctx, handle(ctx, d)); err != nil {
			log.Fatal(err)
		}
		mock.Add(time.Hour)
		bankOpen = true
	}
	// Output:
	// attempt 1 of payout-7: the bank is closed, back in an hour
	// attempt 1 of payout-7: paid
}
