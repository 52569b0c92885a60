package pgstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/internal/pgtest"
)

// TestServerRestartUnderLoad stops a server of the test's own with
// pg_ctl stop -m immediate (as a crash would), for a second, while two
// producers enqueue (each call with a 2-second timeout) and four
// receivers of a queue receive and ack, and starts it again. Calls during
// the outage fail with an error, none later than its context; the
// queue's receivers and the producers go on once the server is back,
// without a new store, queue or pool; and in the end the queue is empty,
// every message whose Enqueue returned nil was delivered, none before its
// due time, and none whose Ack returned nil was delivered again.
func TestServerRestartUnderLoad(t *testing.T) {
	srv := pgtest.ForTest(t) // a server of its own: the test stops it
	pool, err := newPool(srv)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	s := openStore(t, pool, "q")
	const (
		visibility  = 3 * time.Second
		callTimeout = 2 * time.Second
	)
	q := newQueue(t, s, durable.WithVisibilityTimeout(visibility), durable.WithMaxAttempts(1000),
		durable.WithBackoff(func(int) time.Duration { return 100 * time.Millisecond }))

	var (
		mu        sync.Mutex
		enqueued  = map[string]time.Time{} // Enqueue returned nil: the due time
		attempted = map[string]bool{}      // every Enqueue
		enqAfter  = map[string]bool{}      // returned nil, called after the restart
		delivered = map[string][]received{}
		ackedOK   = map[string]time.Time{} // Ack returned nil: when
		failures  atomic.Int64             // calls that failed
		slowest   atomic.Int64             // the longest call, ns
		restarted atomic.Pointer[time.Time]
	)
	timed := func(call func(context.Context) error) error {
		c, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		began := time.Now()
		err := call(c)
		d := int64(time.Since(began))
		for {
			old := slowest.Load()
			if d <= old || slowest.CompareAndSwap(old, d) {
				break
			}
		}
		if err != nil {
			failures.Add(1)
		}
		return err
	}

	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	var producers sync.WaitGroup
	for g := range 2 {
		producers.Go(func() {
			for k := 0; loadCtx.Err() == nil; k++ {
				id := fmt.Sprintf("p%d-%06d", g, k)
				due := time.Now().Add(rand.N(300 * time.Millisecond))
				after := restarted.Load() != nil
				mu.Lock()
				attempted[id] = true
				mu.Unlock()
				err := timed(func(c context.Context) error {
					return q.Enqueue(c, durable.Message{ID: id, Payload: []byte(id), Due: due})
				})
				if err == nil {
					mu.Lock()
					enqueued[id] = due
					if after {
						enqAfter[id] = true
					}
					mu.Unlock()
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	recvCtx, stopRecv := context.WithCancel(ctx)
	defer stopRecv()
	var receivers sync.WaitGroup
	for range 4 {
		receivers.Go(func() {
			for {
				d, err := q.Receive(recvCtx)
				if err != nil {
					return // recvCtx ended: the store's errors are retried
				}
				mu.Lock()
				delivered[d.ID] = append(delivered[d.ID], received{d.Attempt, d.Due, time.Now(), string(d.Payload)})
				mu.Unlock()
				if timed(d.Ack) == nil {
					mu.Lock()
					ackedOK[d.ID] = time.Now()
					mu.Unlock()
				}
			}
		})
	}
	count := func(since time.Time) (deliveries, enqueues int) {
		mu.Lock()
		defer mu.Unlock()
		for _, ds := range delivered {
			for _, d := range ds {
				if d.recv.After(since) {
					deliveries++
				}
			}
		}
		return deliveries, len(enqAfter)
	}

	began := time.Now()
	require.Eventually(t, func() bool { n, _ := count(began); return n >= 100 }, time.Minute, 5*time.Millisecond,
		"deliveries before the crash")
	require.NoError(t, srv.Stop("immediate"))
	stopped := time.Now()
	before := failures.Load()
	require.Eventually(t, func() bool { return failures.Load() > before }, 10*time.Second, time.Millisecond,
		"calls fail while the server is down")
	time.Sleep(time.Until(stopped.Add(time.Second))) // the outage lasts a second
	require.NoError(t, srv.StartAgain())
	now := time.Now()
	restarted.Store(&now)
	failed := failures.Load() - before
	require.Eventually(t, func() bool { n, e := count(now); return n >= 100 && e >= 100 }, 15*time.Second, 5*time.Millisecond,
		"deliveries and enqueues go on after the restart")
	recovered := time.Since(now)
	require.Eventually(t, func() bool { return s.wake.listening.Load() == 1 }, 10*time.Second, time.Millisecond,
		"the store listens again")
	stopLoad()
	producers.Wait()

	mu.Lock()
	want := len(enqueued)
	mu.Unlock()
	require.Eventually(t, func() bool {
		st, err := s.Stats(ctx)
		if err != nil {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		for id := range enqueued {
			if len(delivered[id]) == 0 {
				return false
			}
		}
		return st == durable.Stats{}
	}, time.Minute, 10*time.Millisecond, "every message enqueued delivered and acked")
	stopRecv()
	receivers.Wait()

	mu.Lock()
	defer mu.Unlock()
	again, retried := 0, 0
	for id, ds := range delivered {
		require.True(t, attempted[id], "%s delivered, never enqueued", id)
		for k, d := range ds {
			assert.Equal(t, id, d.payload)
			assert.False(t, d.recv.Before(d.due), "%s delivered %v before its due time", id, d.due.Sub(d.recv))
			if due, ok := enqueued[id]; ok && d.attempt == 1 {
				// At its due time, or, if it was claimed ahead and its
				// confirmation failed in the outage, at the reap that gave
				// it back, attempt not counted (issue 37): never earlier.
				assert.False(t, due.Sub(d.due) >= time.Microsecond, "%s: due %v, want %v or later", id, d.due, due)
			}
			if d.attempt > 1 {
				retried++ // its lease was lost, expired or not confirmed
			}
			if k > 0 {
				again++
				at, ok := ackedOK[id]
				assert.False(t, ok && at.Before(d.recv), "%s delivered again after an Ack that returned nil", id)
			}
		}
	}
	assert.LessOrEqual(t, time.Duration(slowest.Load()), callTimeout+time.Second, "the slowest call")
	t.Logf("%d messages enqueued, %d delivered again, %d deliveries of an attempt after the first; %d calls failed in the outage, %d in all; slowest call %v; 100 deliveries and 100 enqueues %v after the restart",
		want, again, retried, failed, failures.Load(), time.Duration(slowest.Load()), recovered)
}
