package pgstore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// TestRunTwoProcesses: two queues on two store handles of one queue (two
// processes, as far as the database can tell) run workers; each message,
// due now or a little later, is handled exactly once, never before its due
// time, and the queue is empty at the end. Run claims many at once,
// holds some for its workers and confirms them: the held paths of the
// store.
func TestRunTwoProcesses(t *testing.T) {
	pool := testPool(t)
	queue := freshQueue()
	a := newQueue(t, openStore(t, pool, queue))
	b := newQueue(t, openStore(t, pool, queue))

	const n = 300
	var (
		mu      sync.Mutex
		handled = map[string]int{}
		early   []string
		wg      sync.WaitGroup
	)
	wg.Add(n)
	due := map[string]time.Time{}
	h := func(_ context.Context, d *durable.Delivery) error {
		mu.Lock()
		defer mu.Unlock()
		if time.Now().Before(due[d.ID]) {
			early = append(early, d.ID)
		}
		handled[d.ID]++
		if handled[d.ID] == 1 {
			wg.Done()
		}
		return nil
	}
	now := time.Now()
	var msgs []durable.Message
	for i := range n {
		id := fmt.Sprintf("m%03d", i)
		due[id] = now.Add(time.Duration(i%30) * 10 * time.Millisecond)
		msgs = append(msgs, durable.Message{ID: id, Due: due[id]})
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 2)
	for _, q := range []*durable.Queue{a, b} {
		go func() { done <- q.Run(runCtx, 4, h) }()
	}
	for _, m := range msgs {
		require.NoError(t, a.Enqueue(ctx, m))
	}

	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(30 * time.Second):
		t.Fatal("not every message was handled")
	}
	require.Eventually(t, func() bool {
		st, err := a.Stats(ctx)
		require.NoError(t, err)
		return st == durable.Stats{}
	}, 10*time.Second, 10*time.Millisecond, "acked")
	cancel()
	for range 2 {
		select {
		case err := <-done:
			require.NoError(t, err, "Run returns nil when its ctx ends")
		case <-time.After(30 * time.Second):
			t.Fatal("Run did not return")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, early, "handled before due")
	for id, k := range handled {
		assert.Equal(t, 1, k, "%s handled %d times", id, k)
	}
	assert.Len(t, handled, n)
}
