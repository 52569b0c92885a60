package timingwheel

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Smoke tests on the real clock, where the driver wakes on its timerfd (a
// timerfd on Linux) as well as its clock timer: every timer fires, none
// early, none very late. The lateness bounds are loose, to hold on a
// loaded 2-core machine; BenchmarkFire measures the real figures.

// lateness schedules n timers on w, due 0.1 ms to 60 ms from now, and
// returns their lateness, sorted.
func lateness(t *testing.T, w *TimingWheel, n int) []time.Duration {
	t.Helper()
	var mu sync.Mutex
	late := make([]time.Duration, 0, n)
	var wg sync.WaitGroup
	wg.Add(n)
	for i := range n {
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
	return late
}

func TestRealClockFiresNeverEarly(t *testing.T) {
	for _, exec := range []struct {
		name string
		run  func(func())
	}{{"inline", inline}, {"goroutine", nil}} {
		t.Run(exec.name, func(t *testing.T) {
			w, err := New(WithExecutor(exec.run))
			require.NoError(t, err)
			w.Start()
			defer w.Stop()
			const n = 400
			late := lateness(t, w, n)
			assert.GreaterOrEqual(t, late[0], time.Duration(0), "a timer fired early")
			assert.Less(t, late[n/2], 50*time.Millisecond, "median lateness")
			t.Logf("lateness: min %v, median %v, max %v", late[0], late[n/2], late[n-1])
		})
	}
}

// Many wheels, each with its own timerfd, fire at once: every timer of
// every wheel fires, none early, and none holds up the others for long.
func TestManyWheelsFireTogether(t *testing.T) {
	const wheels, n = 40, 100
	var all []time.Duration
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range wheels {
		w, err := New(WithExecutor(inline))
		require.NoError(t, err)
		w.Start()
		defer w.Stop()
		wg.Go(func() {
			late := lateness(t, w, n)
			mu.Lock()
			all = append(all, late...)
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.Sort(all)
	require.Len(t, all, wheels*n)
	assert.GreaterOrEqual(t, all[0], time.Duration(0), "a timer fired early")
	assert.Less(t, all[len(all)/2], 50*time.Millisecond, "median lateness")
	t.Logf("lateness over %d wheels: min %v, median %v, max %v", wheels, all[0], all[len(all)/2], all[len(all)-1])
}

// With a timer due every millisecond the driver is always about to wake.
// Stop still returns, and nothing fires after it. (The bound only catches
// a hang: on a loaded machine Stop may take a while.)
func TestStopWhileTimersComeDue(t *testing.T) {
	for range 20 {
		w, err := New(WithExecutor(inline))
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

// Stop racing the firing of timers due within a few milliseconds on the
// real clock: for every timer exactly one of "it fired" and "a Stop
// returned true" happens, and none fires early.
func TestStopRacesRealClockFiring(t *testing.T) {
	w, err := New()
	require.NoError(t, err)
	w.Start()
	defer w.Stop()
	const rounds, goroutines, per = 20, 4, 500
	var fired, stopped, early, earliest atomic.Int64 // earliest: the most ns early
	for range rounds {
		var wg sync.WaitGroup
		for range goroutines {
			wg.Go(func() {
				timers := make([]*Timer, per)
				start := time.Now()
				for i := range timers {
					due := start.Add(time.Duration(i) * 4 * time.Microsecond)
					timers[i] = w.AfterFuncAt(due, func() {
						if by := time.Until(due); by > 0 {
							early.Add(1)
							for e := earliest.Load(); int64(by) > e && !earliest.CompareAndSwap(e, int64(by)); e = earliest.Load() {
							}
						}
						fired.Add(1)
					})
				}
				// Stop them in order while the first half comes due.
				time.Sleep(time.Millisecond)
				for _, tm := range timers {
					if tm.Stop() {
						stopped.Add(1)
					}
				}
			})
		}
		wg.Wait()
	}
	total := int64(rounds * goroutines * per)
	require.Eventually(t, func() bool { return fired.Load()+stopped.Load() >= total },
		10*time.Second, time.Millisecond)
	require.Zero(t, w.Len())
	assert.Equal(t, total, fired.Load()+stopped.Load(), "fired %d + stopped %d", fired.Load(), stopped.Load())
	assert.Zero(t, early.Load(), "timers fired early, the earliest by %v", time.Duration(earliest.Load()))
	assert.NotZero(t, fired.Load(), "no timer fired before its Stop: no race")
	assert.NotZero(t, stopped.Load(), "every timer fired before its Stop: no race")
}
