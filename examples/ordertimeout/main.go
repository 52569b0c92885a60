// Command ordertimeout is the order-timeout flow on a durable queue: each
// new order is enqueued to be closed after a delay (30 minutes in real
// life) unless it is paid first, and its buyer to be reminded 5 minutes
// before; paying cancels both messages; a consumer reminds the buyers and
// closes the unpaid orders when their time comes. The two sorts of
// messages are two kinds (durable.Kind), each with its handler, which a
// durable.Mux routes to. The messages are kept in a file, so stopping the
// program (even with kill -9) loses nothing: run it again and it reminds
// and closes what came due meanwhile.
//
// The file is the one -db names, by default timingwheel/orders.db in the
// user's cache directory (os.UserCacheDir, such as ~/.cache on Linux), or
// in os.TempDir when there is none; never in the working directory unless
// -db says so. Its directory is created if needed.
//
//	go run ./examples/ordertimeout -orders 5 -delay 10s -remind 5s   # stop it with Ctrl-C after a few seconds
//	go run ./examples/ordertimeout -orders 0              # the 5 orders are closed when due
//	go run ./examples/ordertimeout -db /tmp/shop.db       # the queue in a file of your own
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// config is the command line's settings.
type config struct {
	db      string
	orders  int
	delay   time.Duration
	remind  time.Duration
	payRate float64
	prefix  string
}

// order is the payload of both kinds of messages.
type order struct {
	ID     string  `json:"id"`
	Amount float64 `json:"amount"`
}

// The kinds of messages: an order to close, a buyer to remind.
var (
	closeKind  = durable.NewKind[order]("order.close")
	remindKind = durable.NewKind[order]("order.remind")
)

func main() {
	c, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		os.Exit(2) // the flag package has said what is wrong
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c, os.Stdout); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "ordertimeout:", err)
		os.Exit(1)
	}
}

// parseFlags reads the command line, writing its errors and usage to
// errOut.
func parseFlags(args []string, errOut io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("ordertimeout", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.StringVar(&c.db, "db", defaultDB(), "the `file` that keeps the queue")
	fs.IntVar(&c.orders, "orders", 5, "new orders to place; 0 only closes the ones already queued")
	fs.DurationVar(&c.delay, "delay", 30*time.Minute, "how long an order may stay unpaid")
	fs.DurationVar(&c.remind, "remind", 5*time.Minute, "how long before closing an unpaid order its buyer is reminded")
	fs.Float64Var(&c.payRate, "pay", 0.4, "the share of new orders that get paid, at once")
	fs.StringVar(&c.prefix, "prefix", time.Now().Format("150405"), "prefix of the new orders' IDs")
	return c, fs.Parse(args)
}

// defaultDB is where the queue's file is kept without -db:
// timingwheel/orders.db in the user's cache directory, or in the temp
// directory when there is none.
func defaultDB() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "timingwheel", "orders.db")
}

// run places c.orders orders, pays some, and reminds and closes unpaid
// ones as they come due, until ctx ends (then it returns nil).
func run(ctx context.Context, c config, out io.Writer) error {
	if err := os.MkdirAll(filepath.Dir(c.db), 0o700); err != nil {
		return err
	}
	q, err := durable.Open(c.db)
	if err != nil {
		return err
	}
	defer q.Close()

	for i := 1; i <= c.orders; i++ {
		o := order{ID: fmt.Sprintf("order-%s-%d", c.prefix, i), Amount: float64(rand.IntN(10000)) / 100}
		due := time.Now().Add(c.delay)
		if err := place(ctx, q, o, due, due.Add(-c.remind)); err != nil {
			return err
		}
		fmt.Fprintf(out, "placed %s (%.2f), closes at %s unless paid\n", o.ID, o.Amount, due.Format(time.TimeOnly))
		if rand.Float64() < c.payRate {
			if err := pay(ctx, q, o.ID); err != nil {
				return err
			}
			fmt.Fprintf(out, "paid %s\n", o.ID)
		}
	}
	unpaid, err := unpaidOrders(ctx, q)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%d unpaid orders waiting in %s\n", unpaid, c.db)

	// The consumer: Run hands each message that comes due to the Mux, up
	// to 4 at once, which calls the handler of its kind; Run acks it when
	// the handler returns nil and retries it when it returns an error,
	// until ctx ends.
	var outMu sync.Mutex
	say := func(format string, args ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprintf(out, format, args...)
	}
	// Handlers must be idempotent: delivery is at least once.
	closeOrder := func(ctx context.Context, d *durable.Delivery, o order) error {
		say("closed unpaid %s (%.2f), %v after its due time\n", o.ID, o.Amount, time.Since(d.Due).Round(time.Millisecond))
		return nil
	}
	mux := durable.NewMux()
	durable.Register(mux, closeKind, closeOrder)
	durable.Register(mux, remindKind, func(ctx context.Context, d *durable.Delivery, o order) error {
		say("reminded unpaid %s (%.2f)\n", o.ID, o.Amount)
		return nil
	})
	// Orders placed by an earlier version of this program have no kind:
	// they are closings.
	mux.HandleFunc("", func(ctx context.Context, d *durable.Delivery) error {
		var o order
		if err := json.Unmarshal(d.Payload, &o); err != nil {
			return durable.Permanent(fmt.Errorf("bad order %s: %w", d.ID, err)) // will not get better
		}
		return closeOrder(ctx, d, o)
	})
	return q.Run(ctx, 4, mux.Handle)
}

// The IDs of an order's messages.
func closeID(order string) string  { return order + "/close" }
func remindID(order string) string { return order + "/remind" }

// place enqueues the messages of a new order o: its closing at due, and
// its buyer's reminder at remindAt (at once if that has passed), in one
// write.
func place(ctx context.Context, q *durable.Queue, o order, due, remindAt time.Time) error {
	closing, err := closeKind.Message(closeID(o.ID), o, due)
	if err != nil {
		return err
	}
	// Closing talks to the shop's database: an attempt that takes longer
	// than 30s has failed.
	closing.Timeout = 30 * time.Second
	reminder, err := remindKind.Message(remindID(o.ID), o, remindAt)
	if err != nil {
		return err
	}
	reminder.MaxAttempts = 3 // a reminder is not worth the queue's 10 attempts
	return q.Enqueue(ctx, closing, reminder)
}

// pay cancels the messages of the order id.
func pay(ctx context.Context, q *durable.Queue, id string) error {
	for _, m := range []string{closeID(id), remindID(id)} {
		if _, err := q.Cancel(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// unpaidOrders counts the orders still to be closed: the messages of
// closeKind (or of no kind, from an earlier version) pending or in flight.
func unpaidOrders(ctx context.Context, q *durable.Queue) (int, error) {
	n := 0
	for _, st := range []durable.State{durable.Pending, durable.InFlight} {
		for cursor := ""; ; {
			infos, next, err := q.List(ctx, st, cursor, 100)
			if err != nil {
				return 0, err
			}
			for _, info := range infos {
				if info.Kind == closeKind.Name() || info.Kind == "" {
					n++
				}
			}
			if next == "" {
				break
			}
			cursor = next
		}
	}
	return n, nil
}
