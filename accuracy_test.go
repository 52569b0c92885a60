package timingwheel

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// On the real clock, with the driver sleeping on a runtime timer for long
// waits and sleeping the last stretch precisely (precisesleep_linux.go):
// every timer fires, none early, and none very late. The lateness bound is
// loose, to hold on a loaded 2-core machine; the benchmarks measure the
// real figures.
func TestRealClockFiresNeverEarly(t *testing.T) {
	w, err := New(WithExecutor(inline))
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
}

// A wheel stopped while its driver sleeps the last stretch before a
// bucket stops promptly, and the timer does not fire.
func TestStopDuringPreciseSleep(t *testing.T) {
	w, err := New(WithExecutor(inline))
	require.NoError(t, err)
	w.Start()
	fired := make(chan struct{}, 1)
	w.AfterFunc(preciseWindow/2+time.Millisecond, func() { fired <- struct{}{} })
	w.Stop()
	select {
	case <-fired:
		t.Fatal("a timer fired after Stop returned")
	case <-time.After(5 * time.Millisecond):
	}
}
