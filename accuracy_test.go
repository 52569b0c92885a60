package timingwheel

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A smoke test on the real clock, with and without WithPreciseSleep: every
// timer fires, none early, none very late. The lateness bound is loose, to
// hold on a loaded 2-core machine; BenchmarkFire measures the real figures.
func TestRealClockFiresNeverEarly(t *testing.T) {
	for _, precise := range []bool{false, true} {
		t.Run(fmt.Sprintf("precise=%v", precise), func(t *testing.T) {
			w, err := New(WithExecutor(inline), WithPreciseSleep(precise))
			require.NoError(t, err)
			w.Start()
			defer w.Stop()

			const n = 400
			var mu sync.Mutex
			late := make([]time.Duration, 0, n)
			var wg sync.WaitGroup
			wg.Add(n)
			for i := range n {
				// 0.1 ms to 60 ms: inside the precise window, and beyond it.
				d := time.Duration(100+i*150) * time.Microsecond
				due := time.Now().Add(d)
				w.AfterFuncAt(due, func() {
					l := time.Since(due)
					mu.Lock()
					late = append(late, l)
					mu.Unlock()
					wg.Done()
				})
			}
			wg.Wait()
			slices.Sort(late)
			assert.GreaterOrEqual(t, late[0], time.Duration(0), "a timer fired early")
			assert.Less(t, late[n/2], 50*time.Millisecond, "median lateness")
			t.Logf("lateness: min %v, median %v, max %v", late[0], late[n/2], late[n-1])
		})
	}
}

// With a timer due every millisecond a precise driver is always within
// preciseWindow of its next bucket, so it spends its time in its precise
// last stretch. Stop still returns, and nothing fires after it. (The
// bound only catches a hang: on a loaded machine Stop may take a while.)
func TestStopDuringPreciseSleep(t *testing.T) {
	for range 20 {
		w, err := New(WithExecutor(inline), WithPreciseSleep(true))
		require.NoError(t, err)
		w.Start()
		var stopped atomic.Bool
		var after atomic.Int32
		start := time.Now()
		for i := range 100 {
			w.AfterFuncAt(start.Add(time.Duration(i+1)*time.Millisecond), func() {
				if stopped.Load() {
					after.Add(1)
				}
			})
		}
		time.Sleep(10*time.Millisecond + 700*time.Microsecond)
		t0 := time.Now()
		w.Stop()
		took := time.Since(t0)
		stopped.Store(true)
		assert.Less(t, took, time.Second, "Stop took %v", took)
		time.Sleep(2 * time.Millisecond)
		assert.Zero(t, after.Load(), "timers fired after Stop returned")
	}
}
