package durable

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStressManyProducersAndConsumers runs producers and consumers on one
// queue at once, on the real clock: consumers fail some attempts (Retry)
// and the rest are acked. Every message must be acked exactly once, never
// be delivered before its due time, and the queue must end empty.
func TestStressManyProducersAndConsumers(t *testing.T) {
	const producers, consumers, perProducer = 6, 6, 300
	total := producers * perProducer
	q, err := Open(filepath.Join(t.TempDir(), "q.db"),
		WithVisibilityTimeout(5*time.Second),
		WithBackoff(func(int) time.Duration { return time.Millisecond }))
	require.NoError(t, err)
	defer q.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var (
		mu      sync.Mutex
		acked   = map[string]int{}
		early   []string
		retried atomic.Int64
		wg      sync.WaitGroup
	)
	for p := range producers {
		wg.Go(func() {
			for n := range perProducer {
				id := fmt.Sprintf("p%d-%d", p, n)
				due := time.Now().Add(time.Duration(rand.IntN(20)) * time.Millisecond)
				assert.NoError(t, q.Enqueue(ctx, Message{ID: id, Payload: []byte(id), Due: due}))
			}
		})
	}
	var done atomic.Int64
	var consumersWG sync.WaitGroup
	for range consumers {
		consumersWG.Go(func() {
			for done.Load() < int64(total) {
				rctx, rcancel := context.WithTimeout(ctx, 100*time.Millisecond)
				d, err := q.Receive(rctx)
				rcancel()
				if err != nil {
					require.ErrorIs(t, err, context.DeadlineExceeded)
					continue
				}
				if now := time.Now(); now.Before(d.Due) {
					mu.Lock()
					early = append(early, fmt.Sprintf("%s %v early", d.ID, d.Due.Sub(now)))
					mu.Unlock()
				}
				assert.Equal(t, d.ID, string(d.Payload))
				if d.Attempt < 3 && rand.IntN(4) == 0 {
					assert.NoError(t, d.Retry(ctx, 0))
					retried.Add(1)
					continue
				}
				if assert.NoError(t, d.Ack(ctx)) {
					mu.Lock()
					acked[d.ID]++
					mu.Unlock()
					done.Add(1)
				}
			}
		})
	}
	wg.Wait()
	consumersWG.Wait()
	require.NoError(t, ctx.Err(), "the consumers did not finish in time")

	assert.Empty(t, early, "deliveries before due")
	assert.Len(t, acked, total)
	for id, n := range acked {
		assert.Equal(t, 1, n, "acks of %s", id)
	}
	t.Logf("%d messages, %d retries", total, retried.Load())
	assert.NotZero(t, retried.Load())
	st, err := q.Stats(context.Background())
	require.NoError(t, err)
	assert.Equal(t, Stats{}, st)
}
