package redisstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/internal/deliverylog"
)

// The upsert-and-cancel test (TestUpsertAndCancelAcrossProcesses): a
// mutator process enqueues message i 100ms before its due time, then,
// mutOffset(i) before the due time, while a receiver (of any process)
// holds it claimed ahead, cancels it (i%3 == 0), replaces it by an
// Enqueue of payload v2 due at the same time (i%3 == 1), or leaves it
// (i%3 == 2). It also receives, from mutatorReceivers goroutines, and it
// pauses 40ms after the reply to every replacing Enqueue, during which
// its own receivers may claim the new version ahead.
const (
	mutSpacing       = 2 * time.Millisecond   // between due times
	mutLead          = 100 * time.Millisecond // enqueue this long before due
	mutPause         = 40 * time.Millisecond  // after the reply of a replacing Enqueue
	mutatorReceivers = 4
)

func mutDue(start time.Time, i int) time.Time { return start.Add(time.Duration(i) * mutSpacing) }

// mutOffset is how long before its due time message i is cancelled or
// replaced: 0 to 39ms, inside the 50ms of the claim ahead.
func mutOffset(i int) time.Duration { return time.Duration(i*7919%40) * time.Millisecond }

// pausingStore logs the instant of the reply to each Enqueue of payload
// v2 (a U line) and pauses mutPause before returning it.
type pausingStore struct {
	*Store
	write func(format string, args ...any)
}

func (s *pausingStore) Enqueue(ctx context.Context, msgs []durable.Message) error {
	err := s.Store.Enqueue(ctx, msgs)
	if err == nil && len(msgs) == 1 && string(msgs[0].Payload) == "v2" {
		s.write("U %s %d\n", msgs[0].ID, time.Now().UnixNano())
		time.Sleep(mutPause)
	}
	return err
}

// childParams reads the message count, start and log of a child.
func childParams() (n int, start time.Time, f *os.File, err error) {
	n, err = strconv.Atoi(os.Getenv(childCountEnv))
	if err != nil {
		return 0, time.Time{}, nil, err
	}
	startNs, err := strconv.ParseInt(os.Getenv(childStartEnv), 10, 64)
	if err != nil {
		return 0, time.Time{}, nil, err
	}
	f, err = os.OpenFile(os.Getenv(childLogEnv), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	return n, time.Unix(0, startNs), f, err
}

// runMutator is the mutator of the upsert-and-cancel test. Besides the
// lines of deliverylog, it writes C id found|none|inflight returned-ns
// for each Cancel, U lines (pausingStore), and X once all are done.
func runMutator() error {
	n, start, f, err := childParams()
	if err != nil {
		return err
	}
	defer f.Close()
	var mu sync.Mutex
	write := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(f, format, args...)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	pausing := func(s *Store) durable.Store { return &pausingStore{Store: s, write: write} }
	return withChildQueue(pausing, func(q *durable.Queue) error { return mutateAll(ctx, q, f, n, start, write) })
}

// mutateAll receives (and logs) from the mutator's receivers while it
// enqueues, then cancels or replaces, each of the n messages near its due
// time; it returns once ctx ends.
func mutateAll(ctx context.Context, q *durable.Queue, f *os.File, n int, start time.Time, write func(string, ...any)) error {
	recvErr := make(chan error, 1)
	go func() { recvErr <- deliverylog.New(f).ReceiveAndAck(ctx, q, mutatorReceivers) }()

	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		due := mutDue(start, i)
		time.Sleep(time.Until(due.Add(-mutLead)))
		wg.Go(func() { errs[i] = mutate(q, i, due, write) })
	}
	wg.Wait()
	write("X\n")
	err := errors.Join(errs...)
	<-ctx.Done()
	return errors.Join(err, <-recvErr)
}

func mutate(q *durable.Queue, i int, due time.Time, write func(string, ...any)) error {
	ctx := context.Background()
	id := childID(i)
	if err := q.Enqueue(ctx, durable.Message{ID: id, Payload: []byte("v1"), Due: due}); err != nil {
		return err
	}
	time.Sleep(time.Until(due.Add(-mutOffset(i))))
	switch i % 3 {
	case 0:
		found, err := q.Cancel(ctx, id)
		result := "none"
		switch {
		case errors.Is(err, durable.ErrInFlight):
			result = "inflight"
		case err != nil:
			return err
		case found:
			result = "found"
		}
		write("C %s %s %d\n", id, result, time.Now().UnixNano())
	case 1:
		return q.Enqueue(ctx, durable.Message{ID: id, Payload: []byte("v2"), Due: due})
	}
	return nil
}
