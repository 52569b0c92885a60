package redisstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/internal/deliverylog"
)

// The multi-process test re-executes the test binary as its producer and
// consumers, with the role and parameters in the environment.
const (
	childEnv      = "REDISSTORE_TEST_CHILD" // producer or consumer
	childAddrEnv  = "REDISSTORE_TEST_ADDR"  // unix socket of redis-server
	childCountEnv = "REDISSTORE_TEST_N"     // number of messages
	childStartEnv = "REDISSTORE_TEST_START" // due time of message 0, Unix ns
	childLogEnv   = "REDISSTORE_TEST_LOG"   // the consumer's delivery log
)

// childQueue is the queue name of the multi-process test.
const childQueue = "mp"

// Consumer settings of the multi-process test: a short visibility timeout,
// so that the leases of the killed consumer expire soon, and a short
// back-off.
const (
	childReceivers  = 8
	childVisibility = 3 * time.Second
	childBackoff    = 100 * time.Millisecond
)

// childDue is the due time of message i: spread over two seconds from
// start, out of ID order.
func childDue(start time.Time, i int) time.Time {
	return start.Add(time.Duration(i*7919%2000) * time.Millisecond)
}

func childID(i int) string { return fmt.Sprintf("m%06d", i) }

// moreRoles are the child roles that files of their own add (those built
// on some systems only), by name.
var moreRoles = map[string]func() error{}

// runChild runs the child process of a multi-process test, if this test
// binary was started as one; then it exits.
func runChild() bool {
	role := os.Getenv(childEnv)
	if role == "" {
		return false
	}
	var err error
	switch role {
	case "producer":
		err = runProducer()
	case "consumer":
		err = runConsumer()
	case "runner":
		err = runRunner()
	case "mutator":
		err = runMutator()
	case "scheduler":
		err = runScheduler()
	default:
		if f := moreRoles[role]; f != nil {
			err = f()
			break
		}
		err = fmt.Errorf("unknown child role %q", role)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", role, err)
		os.Exit(1)
	}
	os.Exit(0)
	return true
}

// withChildQueue opens the child's queue, over wrap(store) (nil: the
// store itself), runs fn with it, and closes the queue, the store and the
// client.
func withChildQueue(wrap func(*Store) durable.Store, fn func(q *durable.Queue) error, opts ...durable.Option) error {
	c := redis.NewClient(&redis.Options{Network: "unix", Addr: os.Getenv(childAddrEnv), PoolSize: 32})
	defer c.Close()
	s, err := New(c, childQueue)
	if err != nil {
		return err
	}
	defer s.Close()
	var store durable.Store = s
	if wrap != nil {
		store = wrap(s)
	}
	q, err := durable.New(store, append([]durable.Option{
		durable.WithVisibilityTimeout(childVisibility),
		durable.WithMaxAttempts(1000),
		durable.WithBackoff(func(int) time.Duration { return childBackoff })}, opts...)...)
	if err != nil {
		return err
	}
	defer q.Close()
	return fn(q)
}

// runProducer enqueues the messages from 16 goroutines, and fails if any
// Enqueue fails.
func runProducer() error {
	n, err := strconv.Atoi(os.Getenv(childCountEnv))
	if err != nil {
		return err
	}
	startNs, err := strconv.ParseInt(os.Getenv(childStartEnv), 10, 64)
	if err != nil {
		return err
	}
	start := time.Unix(0, startNs)
	return withChildQueue(nil, func(q *durable.Queue) error { return produce(q, n, start) })
}

// produce enqueues messages 0 to n-1 from 16 goroutines.
func produce(q *durable.Queue, n int, start time.Time) error {
	var next atomic.Int64
	errs := make([]error, 16)
	var wg sync.WaitGroup
	for g := range errs {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				due := childDue(start, i)
				m := durable.Message{ID: childID(i), Payload: []byte(strconv.FormatInt(due.UnixNano(), 10)), Due: due}
				if err := q.Enqueue(context.Background(), m); err != nil {
					errs[g] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// runConsumer receives and acks from childReceivers goroutines until
// SIGTERM, writing to its log, with one write each so that a SIGKILL
// loses nothing written:
//
//	D id attempt due received deadline payload   (a delivery; times in Unix ns)
//	A id                                         (its Ack returned nil)
//	L id                                         (its Ack returned ErrLeaseLost)
//	E id error                                   (its Ack failed otherwise)
func runConsumer() error {
	f, err := os.OpenFile(os.Getenv(childLogEnv), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	return withChildQueue(nil, func(q *durable.Queue) error {
		return deliverylog.New(f).ReceiveAndAck(ctx, q, childReceivers)
	})
}

// runRunner consumes with Queue.Run and childReceivers workers until
// SIGTERM, writing the lines of runConsumer: D from the handler, which
// returns nil, and A or L from the queue's observer as Run's acks are
// written.
func runRunner() error {
	f, err := os.OpenFile(os.Getenv(childLogEnv), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	lw := deliverylog.New(f)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	return withChildQueue(nil, func(q *durable.Queue) error {
		err := q.Run(ctx, childReceivers, func(_ context.Context, d *durable.Delivery) error {
			lw.Delivered(d)
			return nil
		})
		return errors.Join(err, lw.Err())
	}, durable.WithObserver(lw.Observer()))
}
