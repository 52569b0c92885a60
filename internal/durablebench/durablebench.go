// Package durablebench holds the measurements of package durable that both
// its benchmarks and twbench's durable scenario make, so that the two
// report the same thing.
package durablebench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// ID returns the message ID of the ith message of a run, with a prefix
// that keeps runs apart.
func ID(prefix string, i int) string { return prefix + strconv.Itoa(i) }

// EnqueueRate enqueues n messages of payload bytes due in an hour, from
// producers goroutines at once, and returns the enqueues per second.
func EnqueueRate(ctx context.Context, q *durable.Queue, prefix string, producers, n, payload int) (float64, error) {
	return EnqueueBatchRate(ctx, q, prefix, producers, n, 1, payload)
}

// EnqueueBatchRate enqueues n messages of payload bytes due in an hour,
// batch messages a call of Queue.Enqueue, from producers goroutines at
// once, and returns the messages enqueued per second.
func EnqueueBatchRate(ctx context.Context, q *durable.Queue, prefix string, producers, n, batch, payload int) (float64, error) {
	return WriteBatchRate(ctx, prefix, producers, n, batch, payload, func(ctx context.Context, msgs []durable.Message) error {
		return q.Enqueue(ctx, msgs...)
	})
}

// WriteBatchRate has producers goroutines call write with batch messages
// at a time (the last may be shorter), n messages of payload bytes due in
// an hour in all, and returns the messages written per second.
func WriteBatchRate(ctx context.Context, prefix string, producers, n, batch, payload int, write func(context.Context, []durable.Message) error) (float64, error) {
	body := make([]byte, payload)
	due := time.Now().Add(time.Hour)
	var next atomic.Int64
	start := time.Now()
	err := parallel(producers, func() error {
		msgs := make([]durable.Message, 0, batch)
		for {
			lo := int(next.Add(int64(batch))) - batch
			if lo >= n {
				return nil
			}
			msgs = msgs[:0]
			for i := lo; i < min(lo+batch, n); i++ {
				msgs = append(msgs, durable.Message{ID: ID(prefix, i), Payload: body, Due: due})
			}
			if err := write(ctx, msgs); err != nil {
				return err
			}
		}
	})
	return float64(n) / time.Since(start).Seconds(), err
}

// ReceiveAckRate has consumers goroutines receive and ack n messages,
// due already (see Preload), and returns receive+acks per second.
func ReceiveAckRate(ctx context.Context, q *durable.Queue, consumers, n int) (float64, error) {
	start := time.Now()
	err := consume(ctx, q, consumers, n, func(*durable.Delivery) error { return nil })
	return float64(n) / time.Since(start).Seconds(), err
}

// RunRate has q.Run with workers handlers receive and ack n messages, due
// already (see Preload), and returns receive+acks per second: the same
// work as ReceiveAckRate, through the runner.
func RunRate(ctx context.Context, q *durable.Queue, workers, n int) (float64, error) {
	return RunHandlerRate(ctx, q, workers, n, func(context.Context, *durable.Delivery) error { return nil })
}

// RunHandlerRate is RunRate with h as the handler of each message, which
// must return nil: the rate of a queue whose messages go through h (a
// Mux, say).
func RunHandlerRate(ctx context.Context, q *durable.Queue, workers, n int, h durable.Handler) (float64, error) {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var handled atomic.Int64
	start := time.Now()
	var once sync.Once
	err := q.Run(ctx, workers, func(ctx context.Context, d *durable.Delivery) error {
		if err := h(ctx, d); err != nil {
			return err
		}
		if handled.Add(1) == int64(n) {
			// The last ack follows this return; Run waits for it.
			once.Do(stop)
		}
		return nil
	})
	elapsed := time.Since(start)
	if err != nil {
		return 0, err
	}
	st, err := q.Stats(context.WithoutCancel(ctx))
	if err != nil {
		return 0, err
	}
	if left := st.Pending + st.InFlight; left != 0 {
		return 0, fmt.Errorf("durablebench: %d messages left after Run handled %d", left, handled.Load())
	}
	return float64(n) / elapsed.Seconds(), nil
}

// Lead is how long after now the first of n messages of a lateness
// figure is due: time to enqueue them all at 5,000 a second, which a slow
// preload must not eat into, and a second more for a machine busy with
// other work (a file store's fsyncs under a load of 4 took 485ms for 100
// messages). Figures that compare with asynq or River use it for theirs.
func Lead(n int) time.Duration { return time.Second + time.Duration(n)*200*time.Microsecond }

// Lateness enqueues n messages due at random instants spread over window
// from now, has consumers goroutines receive and ack them, and returns how
// late each was received after its due time, sorted. A message received
// early is an error.
func Lateness(ctx context.Context, q *durable.Queue, prefix string, consumers, n int, window time.Duration) ([]time.Duration, error) {
	lead := Lead(n)
	start := time.Now().Add(lead)
	step := window / time.Duration(n)
	slot := rand.Perm(n) // enqueued out of due order
	if err := Preload(ctx, q, prefix, n, 16, func(i int) time.Time {
		return start.Add(time.Duration(slot[i]) * step)
	}); err != nil {
		return nil, err
	}
	if late := time.Since(start); late > 0 {
		return nil, fmt.Errorf("durablebench: enqueueing %d messages took %v longer than the %v allowed", n, late, lead)
	}
	late := make([]time.Duration, 0, n)
	var mu sync.Mutex
	err := consume(ctx, q, consumers, n, func(d *durable.Delivery) error {
		l := time.Since(d.Due)
		if l < 0 {
			return fmt.Errorf("durablebench: %s received %v before its due time", d.ID, -l)
		}
		mu.Lock()
		late = append(late, l)
		mu.Unlock()
		return nil
	})
	slices.Sort(late)
	return late, err
}

// consume has consumers goroutines receive n messages in all; each is
// handed to f, then acked.
func consume(ctx context.Context, q *durable.Queue, consumers, n int, f func(*durable.Delivery) error) error {
	var left atomic.Int64
	left.Store(int64(n))
	return parallel(consumers, func() error {
		for left.Add(-1) >= 0 {
			d, err := q.Receive(ctx)
			if err != nil {
				return err
			}
			if err := f(d); err != nil {
				return err
			}
			if err := d.Ack(ctx); err != nil {
				return err
			}
		}
		return nil
	})
}

// Preload enqueues n messages due at due(i) (the zero time: now) through
// q, from 8 goroutines at once, so that their writes share commits.
func Preload(ctx context.Context, q *durable.Queue, prefix string, n, payload int, due func(i int) time.Time) error {
	body := make([]byte, payload)
	return PreloadMessages(ctx, q, n, func(i int) (durable.Message, error) {
		return durable.Message{ID: ID(prefix, i), Payload: body, Due: due(i)}, nil
	})
}

// PreloadMessages enqueues n messages, msg(0) to msg(n-1), from 8
// goroutines, one message per Enqueue.
func PreloadMessages(ctx context.Context, q *durable.Queue, n int, msg func(i int) (durable.Message, error)) error {
	var next atomic.Int64
	return parallel(8, func() error {
		for {
			i := int(next.Add(1)) - 1
			if i >= n {
				return nil
			}
			m, err := msg(i)
			if err != nil {
				return err
			}
			if err := q.Enqueue(ctx, m); err != nil {
				return err
			}
		}
	})
}

// PreloadStore writes n messages due at due(i) straight to s, in batches
// of 1000 per Enqueue: the quick way to fill a store with millions.
func PreloadStore(ctx context.Context, s durable.Store, prefix string, n, payload int, due func(i int) time.Time) error {
	body := make([]byte, payload)
	const batch = 1000
	msgs := make([]durable.Message, 0, batch)
	for i := 0; i < n; i += batch {
		msgs = msgs[:0]
		for j := i; j < min(i+batch, n); j++ {
			msgs = append(msgs, durable.Message{ID: ID(prefix, j), Payload: body, Due: due(j)})
		}
		if err := s.Enqueue(ctx, msgs); err != nil {
			return err
		}
	}
	return nil
}

// Memory is the memory of this process.
type Memory struct {
	// Heap is the Go heap in use after a GC, in bytes.
	Heap uint64
	// RSSAnon is the resident anonymous memory (heap, stacks, runtime)
	// and RSSFile the resident pages of mapped files (the store's file,
	// which the kernel can drop and read again), in bytes.
	RSSAnon, RSSFile int64
}

// ReadMemory measures the process's memory now.
func ReadMemory() Memory {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := Memory{Heap: ms.HeapAlloc}
	m.RSSAnon, _ = procKB("RssAnon:")
	m.RSSFile, _ = procKB("RssFile:")
	return m
}

// procKB reads a "Key: n kB" line of /proc/self/status, in bytes.
func procKB(key string) (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, key); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("durablebench: no " + key + " in /proc/self/status")
}

// Percentile returns the p-quantile (0 to 1) of sorted durations.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p * float64(len(sorted)-1))
	return sorted[i]
}

// parallel runs f on n goroutines and returns the first error.
func parallel(n int, f func() error) error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for g := range n {
		wg.Go(func() { errs[g] = f() })
	}
	wg.Wait()
	return errors.Join(errs...)
}
