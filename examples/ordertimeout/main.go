// Command ordertimeout is the order-timeout flow on a durable queue: each
// new order is enqueued to be closed after a delay (30 minutes in real
// life) unless it is paid first; paying cancels its message; a consumer
// closes the unpaid orders when their time comes. The messages are kept
// in a file, so stopping the program (even with kill -9) loses nothing:
// run it again and it closes the orders that came due meanwhile.
//
// The file is the one -db names, by default timingwheel/orders.db in the
// user's cache directory (os.UserCacheDir, such as ~/.cache on Linux), or
// in os.TempDir when there is none; never in the working directory unless
// -db says so. Its directory is created if needed.
//
//	go run ./examples/ordertimeout -orders 5 -delay 10s   # stop it with Ctrl-C after a few seconds
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
	payRate float64
	prefix  string
}

// order is a message's payload.
type order struct {
	ID     string  `json:"id"`
	Amount float64 `json:"amount"`
}

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

// run places c.orders orders, pays some, and closes unpaid ones as they
// come due, until ctx ends (then it returns nil).
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
		payload, err := json.Marshal(o)
		if err != nil {
			return err
		}
		due := time.Now().Add(c.delay)
		if err := q.Enqueue(ctx, durable.Message{ID: o.ID, Payload: payload, Due: due}); err != nil {
			return err
		}
		fmt.Fprintf(out, "placed %s (%.2f), closes at %s unless paid\n", o.ID, o.Amount, due.Format(time.TimeOnly))
		if rand.Float64() < c.payRate {
			if _, err := q.Cancel(ctx, o.ID); err != nil {
				return err
			}
			fmt.Fprintf(out, "paid %s\n", o.ID)
		}
	}
	st, err := q.Stats(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%d unpaid orders waiting in %s\n", st.Pending+st.InFlight, c.db)

	// The consumer: Run hands each order that comes due to the handler, up to
	// 4 at once, acks it when the handler returns nil and retries it when
	// it returns an error, until ctx ends.
	var outMu sync.Mutex
	return q.Run(ctx, 4, func(ctx context.Context, d *durable.Delivery) error {
		var o order
		if err := json.Unmarshal(d.Payload, &o); err != nil {
			// A bad payload will not get better: it dies after its attempts.
			return fmt.Errorf("bad order %s: %w", d.ID, err)
		}
		// Closing an order must be idempotent: delivery is at least once.
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprintf(out, "closed unpaid %s (%.2f), %v after its due time\n", o.ID, o.Amount, time.Since(d.Due).Round(time.Millisecond))
		return nil
	})
}
