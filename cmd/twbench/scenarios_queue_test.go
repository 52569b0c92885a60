package main

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/queue"
)

// TestQueueKey checks that keys have the fixed length that the per-item
// bytes assume, and are distinct.
func TestQueueKey(t *testing.T) {
	seen := map[string]bool{}
	for _, i := range []int{0, 1, 9, 10, 12345, 999_999_999} {
		k := queueKey('p', i)
		assert.Len(t, k, queueKeyLen, k)
		assert.Equal(t, byte('p'), k[0])
		assert.False(t, seen[k], "duplicate key %q", k)
		seen[k] = true
	}
	assert.Equal(t, "p000000000012345", queueKey('p', 12345))
	assert.NotEqual(t, queueKey('p', 7), queueKey('n', 7))
}

// TestHeapQueueOrder checks the baseline's order, upserts and removals.
func TestHeapQueueOrder(t *testing.T) {
	q := newHeapQueue()
	defer q.Close()
	ctx := context.Background()
	require.NoError(t, q.Offer("c", 3, 30*time.Millisecond))
	require.NoError(t, q.Offer("a", 1, 10*time.Millisecond))
	require.NoError(t, q.Offer("b", 2, 20*time.Millisecond))
	require.NoError(t, q.Offer("x", 9, time.Hour))
	require.NoError(t, q.Offer("a", 4, 40*time.Millisecond)) // upsert: later, new value
	assert.True(t, q.Remove("x"))
	assert.False(t, q.Remove("x"))
	assert.False(t, q.Remove("nope"))
	assert.Equal(t, 3, q.Len())

	start := time.Now()
	var got []queue.Item[qvalue]
	for range 3 {
		it, err := q.Take(ctx)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, time.Since(it.Due), time.Duration(0), "taken before due: %s", it.Key)
		got = append(got, it)
	}
	assert.GreaterOrEqual(t, time.Since(start), 35*time.Millisecond, "a is due after 40ms")
	keys := []string{got[0].Key, got[1].Key, got[2].Key}
	assert.Equal(t, []string{"b", "c", "a"}, keys)
	assert.Equal(t, qvalue(4), got[2].Value, "upsert replaced the value")
	assert.Equal(t, 0, q.Len())

	// Equal due times come out in offer order.
	for _, k := range []string{"p", "q", "r"} {
		require.NoError(t, q.Offer(k, 0, -time.Second))
	}
	for _, want := range []string{"p", "q", "r"} {
		it, err := q.Take(ctx)
		require.NoError(t, err)
		assert.Equal(t, want, it.Key)
	}
}

// TestHeapQueueWakes checks that a waiting taker is woken by an offer of
// an earlier head, and returns on its context's end and on Close.
func TestHeapQueueWakes(t *testing.T) {
	q := newHeapQueue()
	require.NoError(t, q.Offer("late", 1, time.Hour))
	got := make(chan string, 1)
	go func() {
		it, err := q.Take(context.Background())
		if err != nil {
			got <- err.Error()
			return
		}
		got <- it.Key
	}()
	time.Sleep(10 * time.Millisecond)
	require.NoError(t, q.Offer("soon", 2, 5*time.Millisecond))
	select {
	case k := <-got:
		assert.Equal(t, "soon", k)
	case <-time.After(5 * time.Second):
		t.Fatal("the taker was not woken by an earlier head")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := q.Take(ctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := q.Take(context.Background())
			errs <- err
		}()
	}
	time.Sleep(10 * time.Millisecond)
	q.Close()
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.ErrorIs(t, err, queue.ErrClosed)
	}
	assert.ErrorIs(t, q.Offer("after", 0, 0), queue.ErrClosed)
}

// TestQueueScenarioFigures runs the queue scenario at the tiny size and
// checks its figures.
func TestQueueScenarioFigures(t *testing.T) {
	stdout, _ := tinyRun(t, "-json", "-", "queue")
	var rep report
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	fig := map[string]jsonRow{}
	for _, r := range rep.Rows {
		assert.True(t, strings.HasSuffix(r.Figure, " (vs heap queue)"), r.Figure)
		require.NotNil(t, r.Runtime, r.Figure)
		fig[strings.TrimSuffix(r.Figure, " (vs heap queue)")] = r
	}
	require.Len(t, fig, 8)
	get := func(key string) (ours, heap float64) {
		t.Helper()
		r, ok := fig[key]
		require.True(t, ok, "figure %q missing; have %v", key, fig)
		return *r.Ours, *r.Runtime
	}
	positive := func(key string) {
		t.Helper()
		ours, heap := get(key)
		assert.Positive(t, ours, key)
		assert.Positive(t, heap, key)
	}
	positive("offer(1s)+remove, N=2k")
	positive("offer->take, 2 producers 4 takers, K=10k")
	ours, heap := get("allocs offer+remove, N=2k")
	// Ours recycles its entries through a sync.Pool, which the race
	// detector makes drop some at random: no exact count for ours.
	assert.LessOrEqual(t, ours, heap)
	assert.GreaterOrEqual(t, heap, 0.9, "the heap queue allocates an item per Offer")
	ours, heap = get("heap per pending item beyond key and value, N=2k")
	for _, v := range []float64{ours, heap} {
		assert.Greater(t, v, 8.0)
		assert.Less(t, v, 5000.0)
	}
	lateOf := ", 4 takers, K=10k over 100ms"
	p50o, p50h := get("take lateness p50" + lateOf)
	p99o, p99h := get("take lateness p99" + lateOf)
	assert.LessOrEqual(t, p50o, p99o)
	assert.LessOrEqual(t, p50h, p99h)
	ours, heap = get("taken before due" + lateOf)
	assert.Zero(t, ours)
	assert.Zero(t, heap)
}
