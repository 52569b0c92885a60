package mysqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/seed64e23a5c/timingwheel"
	"github.com/seed64e23a5c/timingwheel/durable"
)

// The multi-process tests re-execute the test binary as their child
// processes, with the role and its parameters in the environment.
// TestMain calls runChild before it starts a server: a child connects to
// the server of its parent, whose DSN it is given.
const (
	childEnv      = "MYSQLSTORE_TEST_CHILD" // the role: worker, producer
	childDSNEnv   = "MYSQLSTORE_TEST_DSN"
	childQueueEnv = "MYSQLSTORE_TEST_QUEUE"
	childLogEnv   = "MYSQLSTORE_TEST_LOG"   // the worker's delivery log
	childCountEnv = "MYSQLSTORE_TEST_COUNT" // the producer's messages
	childSchedEnv = "MYSQLSTORE_TEST_SCHED" // the worker schedules the series "tick", every this duration
	childStallEnv = "MYSQLSTORE_TEST_STALL" // the worker's handler never returns (1)
)

// childLinger is how long a child lives at most: if its parent died
// first, it exits by itself.
const childLinger = 2 * time.Minute

// runChild runs the child process of a multi-process test, if this test
// binary was started as one; then it exits.
func runChild() bool {
	role := os.Getenv(childEnv)
	if role == "" {
		return false
	}
	var err error
	switch role {
	case "worker":
		err = runWorker()
	case "producer":
		err = runProducer()
	default:
		err = fmt.Errorf("unknown child role %q", role)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", role, err)
		os.Exit(1)
	}
	os.Exit(0)
	return true
}

// childStore opens the store of the child's queue.
func childStore(ctx context.Context) (*sql.DB, *Store, error) {
	db, err := sql.Open("mysql", os.Getenv(childDSNEnv))
	if err != nil {
		return nil, nil, err
	}
	s, err := New(ctx, db, os.Getenv(childQueueEnv))
	if err != nil {
		_ = db.Close()
		return nil, nil, err
	}
	return db, s, nil
}

// runWorker runs a queue's Run with 4 workers until SIGTERM, and writes a
// line to its log for each delivery: "D id attempt received-unix-ns",
// after "R" when it runs.
func runWorker() error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, childLinger)
	defer cancel()
	db, s, err := childStore(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	defer s.Close()
	// A short lease: a delivery whose ack the crash of the server lost
	// comes again soon.
	q, err := durable.New(s, durable.WithVisibilityTimeout(2*time.Second))
	if err != nil {
		return err
	}
	defer q.Close()
	f, err := os.OpenFile(os.Getenv(childLogEnv), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	var mu sync.Mutex
	line := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		_, _ = f.WriteString(s + "\n")
	}
	if every := os.Getenv(childSchedEnv); every != "" {
		d, err := time.ParseDuration(every)
		if err != nil {
			return err
		}
		if err := q.Schedule(ctx, "tick", timingwheel.Every(d), []byte("tick")); err != nil {
			return err
		}
	}
	stall := os.Getenv(childStallEnv) == "1"
	line("R")
	return q.Run(ctx, 4, func(ctx context.Context, d *durable.Delivery) error {
		line(fmt.Sprintf("D %s %d %d", d.ID, d.Attempt, time.Now().UnixNano()))
		if stall {
			<-ctx.Done() // until killed
		}
		return nil
	})
}

// runProducer enqueues COUNT messages, one at a time, each due at once,
// and prints "ok id" for each Enqueue that returned nil, "err ..." for
// each that failed, until SIGTERM.
func runProducer() error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, childLinger)
	defer cancel()
	db, s, err := childStore(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	defer s.Close()
	n, _ := strconv.Atoi(os.Getenv(childCountEnv))
	for i := 0; i < n && ctx.Err() == nil; i++ {
		id := "p" + strconv.Itoa(i)
		for ctx.Err() == nil {
			c, done := context.WithTimeout(ctx, 5*time.Second)
			err := s.Enqueue(c, []durable.Message{{ID: id}})
			done()
			if err == nil {
				fmt.Println("ok", id)
				break
			}
			fmt.Println("err", err)
			time.Sleep(20 * time.Millisecond) // the server may be restarting
		}
	}
	return nil
}
