package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
