package queue

import (
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// heapInUse returns the heap in use after collecting garbage. Two cycles
// also empty the sync.Pools' victim caches.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// Rule 6: a queue that has cycled many items, through Remove and through
// Take, holds no more memory than it did fresh. A Go map would keep the
// buckets of its peak (several MB here), and so would a slice.
func TestMemoryReleased(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test allocates about 100 MB")
	}
	const (
		peak      = 200_000
		rounds    = 2
		tolerance = 512 << 10 // noise; without shrinking, the index alone keeps 2MB
	)
	keys := make([]string, peak)
	for i := range keys {
		keys[i] = "item-" + strconv.Itoa(i)
	}
	q := New[[2]int64]()
	defer q.Close()
	// Create the wheel's levels that far deadlines need, in both runs.
	require.NoError(t, q.Offer("warm", [2]int64{}, 2*time.Hour))
	require.True(t, q.Remove("warm"))
	fresh := heapInUse()

	r := rand.New(rand.NewPCG(1, 2))
	var atPeak int64
	for round := range rounds {
		// Pending: offer, upsert some, remove all.
		for _, k := range keys {
			require.NoError(t, q.Offer(k, [2]int64{1, 2}, time.Hour+time.Duration(r.Int64N(int64(time.Hour)))))
		}
		for _, k := range keys[:peak/4] {
			require.NoError(t, q.Offer(k, [2]int64{3, 4}, time.Hour))
		}
		if round == 0 {
			atPeak = heapInUse()
		}
		for _, k := range keys {
			require.True(t, q.Remove(k))
		}
		// Ready: offer due, take all.
		for _, k := range keys {
			require.NoError(t, q.Offer(k, [2]int64{5, 6}, 0))
		}
		for range keys {
			_, ok := q.TryTake()
			require.True(t, ok)
		}
	}
	require.Equal(t, 0, q.Len())
	after := heapInUse()
	t.Logf("heap in use: fresh %d KB, at peak %d KB, after %d rounds of %d items %d KB",
		fresh>>10, atPeak>>10, rounds, peak, after>>10)
	assert.Greater(t, atPeak-fresh, int64(peak*100), "the peak did not show: the test measures nothing")
	assert.Less(t, after-fresh, int64(tolerance), "memory not released after cycling")
	runtime.KeepAlive(keys)
}
