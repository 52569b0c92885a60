package timingwheel

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// distinct reports whether no two times of ts are equal.
func distinct(ts []time.Time) bool {
	seen := map[time.Time]bool{}
	for _, at := range ts {
		if seen[at] {
			return false
		}
		seen[at] = true
	}
	return true
}

// Promise 1: after a stall (here an inline task of another timer holds
// the driver from 5 to 35ms), a periodic timer runs once, late, and then
// on its cadence: never twice at the same moment. Every skips in one step
// and any other Scheduler slot by slot; both keep the promise. (The stall
// is the driver's, not a jump of the mock clock, which fires the driver's
// sleep at each step of the jump.)
func TestPeriodicAfterStallRunsOnceThenOnCadence(t *testing.T) {
	schedulers := map[string]Scheduler{
		"Every": Every(10 * time.Millisecond),
		"func":  schedulerFunc(func(prev time.Time) time.Time { return prev.Add(10 * time.Millisecond) }),
	}
	for name, s := range schedulers {
		t.Run(name, func(t *testing.T) {
			w, mock := mockWheel(t)
			start := mock.Now()
			fired := newFirings()
			entered, release := make(chan struct{}), make(chan struct{})
			w.AfterFunc(5*time.Millisecond, func() {
				close(entered)
				<-release
			})
			tm := w.ScheduleFunc(s, fired.task(mock, 0))
			mock.Add(5 * time.Millisecond)
			<-entered
			mock.Add(30 * time.Millisecond) // the driver is stuck in the task meanwhile
			close(release)
			advance(t, w, mock, 0)
			require.Equal(t, 1, fired.count(0), "a stall over three slots gives one late run")
			advance(t, w, mock, 4*time.Millisecond)
			assert.Equal(t, 1, fired.count(0))
			advance(t, w, mock, time.Millisecond)
			require.Equal(t, 2, fired.count(0))
			for range 30 {
				advance(t, w, mock, time.Millisecond)
			}
			times := fired.times(0)
			require.Len(t, times, 5)
			assert.True(t, distinct(times))
			for i, want := range []time.Duration{35, 40, 50, 60, 70} {
				assert.Equal(t, want*time.Millisecond, times[i].Sub(start), "run %d", i)
			}
			assert.True(t, tm.Stop())
		})
	}
}

// Promise 2: a Scheduler whose Next does not move forward runs at most
// once per tick, and other timers fire on time meanwhile.
func TestSchedulerThatDoesNotMoveForward(t *testing.T) {
	schedulers := map[string]Scheduler{
		"prev":    schedulerFunc(func(prev time.Time) time.Time { return prev }),
		"earlier": schedulerFunc(func(prev time.Time) time.Time { return prev.Add(-time.Hour) }),
	}
	for name, s := range schedulers {
		t.Run(name, func(t *testing.T) {
			w, mock := mockWheel(t)
			start := mock.Now()
			fired := newFirings()
			tm := w.ScheduleFunc(s, fired.task(mock, 0))
			w.AfterFunc(5*time.Millisecond, fired.task(mock, 1))
			for range 10 {
				advance(t, w, mock, time.Millisecond)
			}
			require.Equal(t, []time.Time{start.Add(5 * time.Millisecond)}, fired.times(1))
			times := fired.times(0)
			assert.True(t, distinct(times), "two runs at one moment")
			// The first run is due at once (at the first pass), then one per tick.
			assert.GreaterOrEqual(t, len(times), 10)
			assert.LessOrEqual(t, len(times), 11)
			assert.True(t, tm.Stop())
		})
	}
}

// Promise 2: an inline task that resets its own timer to 0 on every run
// runs once per pass of the driver; other timers fire on time, and Sync
// and Stop are served.
func TestInlineTaskResettingItselfToZero(t *testing.T) {
	mock := clock.NewMock()
	w, err := New(WithClock(mock), WithExecutor(inline))
	require.NoError(t, err)
	w.Start()
	var runs atomic.Int64
	var self *Timer
	var mu sync.Mutex
	mu.Lock()
	self = w.AfterFunc(time.Millisecond, func() {
		runs.Add(1)
		mu.Lock()
		self.Reset(0)
		mu.Unlock()
	})
	mu.Unlock()
	fired := newFirings()
	w.AfterFunc(5*time.Millisecond, fired.task(mock, 1))
	for range 10 {
		mock.Add(time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		require.NoError(t, w.Sync(ctx), "Sync was not served")
		cancel()
	}
	assert.Equal(t, 1, fired.count(1))
	assert.Greater(t, runs.Load(), int64(1))
	stopsWithin(t, w)
}

// Promise 3, also after 2^31 timers fired through one lane: the lanes'
// counts wrap, and Len stays exact. The wheel starts as if the due
// bucket's lanes had seen MaxInt32 timers fire out of half of them, counted
// in the other half. The timers are channel timers made before Start,
// which wait in the due bucket (whose lanes wrap) until the driver runs:
// with the driver running, one could fire before Len is read.
func TestLenExactAfterALanesCountWraps(t *testing.T) {
	mock := clock.NewMock()
	w, err := New(WithClock(mock), WithExecutor(inline))
	require.NoError(t, err)
	defer w.Stop()
	require.Zero(t, len(w.due.lanes)%2)
	for i := range w.due.lanes {
		l := &w.due.lanes[i]
		l.mu.Lock()
		l.pending = math.MaxInt32
		if i%2 == 1 {
			l.pending = -math.MaxInt32
		}
		l.mu.Unlock()
	}
	require.Equal(t, 0, w.Len())
	var timers []*Timer
	for range 3 {
		timers = append(timers, w.NewTimer(0))
	}
	require.Equal(t, 3, w.Len())
	w.Start()
	advance(t, w, mock, time.Millisecond)
	for i, tm := range timers {
		select {
		case <-tm.C:
		default:
			t.Errorf("timer %d did not fire", i)
		}
	}
	assert.Equal(t, 0, w.Len())
}

// Promise 3: Len is exact while the driver cascades 60,000 timers down
// the levels: a goroutine sampling it meanwhile sees every timer.
func TestLenExactDuringCascade(t *testing.T) {
	const n = 60000
	w, mock := mockWheel(t, WithWheelSize(16))
	r := rand.New(rand.NewPCG(1, 2))
	for range n {
		w.AfterFunc(time.Hour+time.Duration(r.Int64N(int64(10*time.Second))), func() {})
	}
	require.Equal(t, n, w.Len())
	var stop atomic.Bool
	var wrong, samples atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			if got := w.Len(); got != n {
				wrong.Store(int64(got))
			}
			samples.Add(1)
		}
	}()
	for range 59 {
		advance(t, w, mock, time.Minute) // cascades, fires nothing
	}
	stop.Store(true)
	<-done
	assert.Zero(t, wrong.Load(), "a sample missed or counted twice timers in flight")
	assert.Positive(t, samples.Load())
	assert.Equal(t, n, w.Len())
}

// Promise 3 after Stop: a timer that the driver fired, and that a Stop
// then took back before its task started, no longer counts once that
// Stop returns, although the driver may still be firing the rest of its
// batch. The Stops run while the driver fires batches of timers due at
// once.
func TestLenExactAfterStopOfAFiredTimer(t *testing.T) {
	const n = 4 * flushBatch
	for range 50 {
		w, mock := mockWheel(t)
		timers := make([]*Timer, n)
		for i := range timers {
			timers[i] = w.AfterFunc(time.Millisecond, func() {})
		}
		stepped := make(chan struct{})
		go func() {
			defer close(stepped)
			mock.Add(time.Millisecond)
		}()
		firing := func() bool {
			for _, tm := range timers {
				if status(tm.load()) != statusPending {
					return true
				}
			}
			return false
		}
		for !firing() {
			runtime.Gosched()
		}
		stopped := 0
		for _, tm := range timers {
			if tm.Stop() {
				stopped++
			}
		}
		require.Zero(t, w.Len(), "counted after every timer fired or was stopped (%d stopped)", stopped)
		<-stepped
		w.Stop()
	}
}

// Promise 4: a periodic timer whose run is under way when the wheel stops
// is kept from running again: Len counts it and Stop returns true, as for
// every other timer the wheel's Stop kept; timers made or reset on a
// stopped wheel count in Len too.
func TestPeriodicRunUnderWayWhenWheelStops(t *testing.T) {
	mock := clock.NewMock()
	w, err := New(WithClock(mock)) // a goroutine per run
	require.NoError(t, err)
	w.Start()
	entered, release := make(chan struct{}), make(chan struct{})
	tm := w.ScheduleFunc(Every(time.Millisecond), func() {
		select {
		case <-entered:
		default:
			close(entered)
			<-release
		}
	})
	mock.Add(time.Millisecond)
	<-entered
	w.Stop()
	close(release)
	// The run parks the timer once f returns.
	require.Eventually(t, func() bool { return w.Len() == 1 }, 5*time.Second, time.Millisecond)
	assert.True(t, tm.Stop(), "the wheel's Stop kept the timer from running again")
	assert.Zero(t, w.Len())

	made := w.AfterFunc(time.Second, func() {})
	assert.Equal(t, 1, w.Len())
	idle := w.AfterFunc(time.Second, func() {})
	assert.True(t, idle.Stop())
	assert.Equal(t, 1, w.Len())
	assert.False(t, idle.Reset(time.Second))
	assert.Equal(t, 2, w.Len())
	assert.True(t, made.Stop())
	assert.True(t, idle.Stop())
	assert.Zero(t, w.Len())
}
