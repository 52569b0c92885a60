package heapqueue

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOrder checks the baseline's order, upserts and removals.
func TestOrder(t *testing.T) {
	q := New[int64]()
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
	var got []Item[int64]
	for range 3 {
		it, err := q.Take(ctx)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, time.Since(it.Due), time.Duration(0), "taken before due: %s", it.Key)
		got = append(got, it)
	}
	assert.GreaterOrEqual(t, time.Since(start), 35*time.Millisecond, "a is due after 40ms")
	keys := []string{got[0].Key, got[1].Key, got[2].Key}
	assert.Equal(t, []string{"b", "c", "a"}, keys)
	assert.Equal(t, int64(4), got[2].Value, "upsert replaced the value")
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

// TestWakes checks that a waiting taker is woken by an offer of
// an earlier head, and returns on its context's end and on Close.
func TestWakes(t *testing.T) {
	q := New[int64]()
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
		assert.ErrorIs(t, err, ErrClosed)
	}
	assert.ErrorIs(t, q.Offer("after", 0, 0), ErrClosed)
}

// The baseline behaves as a keyed delay queue, so that the comparison is
// fair.
func TestBaselineBehavesAsADelayQueue(t *testing.T) {
	q := New[string]()
	require.NoError(t, q.Offer("b", "B", 2*time.Millisecond))
	require.NoError(t, q.Offer("a", "A1", time.Hour))
	require.NoError(t, q.Offer("a", "A", time.Millisecond))
	require.NoError(t, q.Offer("c", "C", 0))
	require.NoError(t, q.Offer("d", "D", 0))
	assert.True(t, q.Remove("d"))
	assert.False(t, q.Remove("d"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var got []string
	for range 3 {
		it, err := q.Take(ctx)
		require.NoError(t, err)
		assert.False(t, time.Now().Before(it.Due))
		got = append(got, it.Value)
	}
	assert.Equal(t, []string{"C", "A", "B"}, got)
	q.Close()
	_, err := q.Take(ctx)
	assert.True(t, errors.Is(err, ErrClosed))
}
