package timingwheel

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Firing with the default executor allocates nothing per timer beyond
// what starting the task's goroutine costs the runtime: each task gets its
// goroutine from a pooled runner's function, not from a closure made at
// each firing (see spawn). The reference is n goroutines started from one
// func value, in the same build (the race detector allocates for each).
func TestDefaultExecutorFiresWithoutAllocating(t *testing.T) {
	const n = 20000
	var wg sync.WaitGroup
	done := func() { wg.Done() }
	mallocs := func(f func()) float64 {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return float64(after.Mallocs-before.Mallocs) / n
	}

	reference := mallocs(func() {
		wg.Add(n)
		for range n {
			go done()
		}
		wg.Wait()
	})

	mock := clock.NewMock()
	w, err := New(WithClock(mock))
	require.NoError(t, err)
	w.Start()
	defer w.Stop()
	wg.Add(n)
	for range n {
		w.AfterFunc(10*time.Millisecond, done)
	}
	firing := mallocs(func() {
		advance(t, w, mock, 10*time.Millisecond)
		wg.Wait()
	})
	// Under the race detector sync.Pool drops a quarter of the runners
	// put back, and each new one costs two allocations (itself and its
	// function value).
	limit := reference + 0.1
	if raceEnabled {
		limit += 0.25 * 2
	}
	assert.Less(t, firing, limit, "allocations per fired timer, against %.3f per goroutine started", reference)
}
