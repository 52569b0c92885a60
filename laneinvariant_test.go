package timingwheel

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// allLanes returns every lane of w that exists.
func allLanes(w *TimingWheel) []*lane {
	var ls []*lane
	for i := range w.due.lanes {
		ls = append(ls, &w.due.lanes[i])
	}
	for i := range w.levels {
		if lv := w.levels[i].Load(); lv != nil {
			for j := range lv.buckets {
				for k := range lv.buckets[j].lanes {
					ls = append(ls, &lv.buckets[j].lanes[k])
				}
			}
		}
	}
	return ls
}

// checkLanes checks the invariant of state.go: every timer a lane holds is
// pending in that lane, at its pos.
func checkLanes(w *TimingWheel) error {
	for _, l := range allLanes(w) {
		l.mu.Lock()
		for i, tm := range l.items {
			s := tm.load()
			if status(s) != statusPending || laneOf(s) != l.id || int(tm.pos) != i {
				l.mu.Unlock()
				return fmt.Errorf("lane %x idx %d: status %d lane %x pos %d", l.id, i, status(s), laneOf(s), tm.pos)
			}
		}
		l.mu.Unlock()
	}
	return nil
}

// checkTimer checks the converse for one timer: a timer pending in lane A
// is in A at its pos (checked under A's lock), and a timer not pending
// names no lane.
func checkTimer(tm *Timer) error {
	s := tm.load()
	if status(s) != statusPending || laneOf(s) == 0 {
		if status(s) != statusPending && laneOf(s) != 0 {
			return fmt.Errorf("status %d with lane %x", status(s), laneOf(s))
		}
		return nil
	}
	l := tm.w.laneByID(laneOf(s))
	l.mu.Lock()
	defer l.mu.Unlock()
	if tm.load() != s {
		return nil
	}
	if int(tm.pos) >= len(l.items) || l.items[tm.pos] != tm {
		return fmt.Errorf("pending in lane %x but not at pos %d", laneOf(s), tm.pos)
	}
	return nil
}

// inAnyLane reports whether some lane of w holds tm.
func inAnyLane(w *TimingWheel, tm *Timer) bool {
	for _, l := range allLanes(w) {
		l.mu.Lock()
		found := slices.Contains(l.items, tm)
		l.mu.Unlock()
		if found {
			return true
		}
	}
	return false
}

// Regression: Stop once stored idle before it read the timer's pos to
// remove it, so a Reset that saw idle could push the timer into another
// lane and write pos meanwhile (a data race under -race, and lanes
// holding stopped timers or missing pending ones without it).
func TestStopAndResetRaceOnOneTimer(t *testing.T) {
	w, _ := mockWheel(t, func(c *config) { c.lanes = 2 })
	tm := w.AfterFunc(time.Hour, func() {})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for range 20000 {
			tm.Stop()
		}
	}()
	go func() {
		defer wg.Done()
		for range 20000 {
			tm.Reset(time.Hour)
		}
	}()
	wg.Wait()
	tm.Stop()
	require.Zero(t, w.Len())
}

// The same race with many timers in one bucket: the lanes stay
// consistent, and exactly the timers left pending fire.
func TestStopAndResetKeepLanesConsistent(t *testing.T) {
	w, mock := mockWheel(t, func(c *config) { c.lanes = 2 })
	var fired atomic.Int64
	timers := make([]*Timer, 64)
	for i := range timers {
		timers[i] = w.AfterFunc(time.Hour, func() { fired.Add(1) })
	}
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 2))
			for range 300000 {
				tm := timers[r.IntN(len(timers))]
				if r.IntN(2) == 0 {
					tm.Stop()
				} else {
					tm.Reset(time.Hour)
				}
			}
		}()
	}
	wg.Wait()
	// Every timer is now pending (Reset last) or idle (Stop last); the
	// pending ones must all fire, and the wheel must end empty.
	pending := 0
	for _, tm := range timers {
		if status(tm.load()) == statusPending {
			pending++
		}
	}
	laneErr := checkLanes(w)
	before := fired.Load()
	advance(t, w, mock, 2*time.Hour)
	require.NoError(t, checkLanes(w))
	require.EqualValues(t, pending, fired.Load()-before, "pending timers that fired")
	require.Zero(t, w.Len())
	require.NoError(t, laneErr)
}

// Stop, Reset and ResetAt from three goroutines on func, channel and
// periodic timers that fire, cascade and wrap round small wheels, then on
// a stopped wheel, while a checker verifies the lane invariant throughout.
// The real clock drives it; the sleeps only set how long it runs.
func TestLaneInvariantUnderStress(t *testing.T) {
	for _, levels := range []int{0, 2, 3} {
		t.Run(fmt.Sprint("levels", levels), func(t *testing.T) {
			opts := []Option{WithTick(50 * time.Microsecond), WithWheelSize(4), func(c *config) { c.lanes = 2; c.levels = levels }}
			w, err := New(opts...)
			require.NoError(t, err)
			w.Start()
			var runs atomic.Int64
			var timers []*Timer
			for i := range 200 {
				switch i % 4 {
				case 0:
					timers = append(timers, w.AfterFunc(time.Duration(i)*37*time.Microsecond, func() { runs.Add(1) }))
				case 1:
					timers = append(timers, w.NewTimer(time.Duration(i)*53*time.Microsecond))
				case 2:
					timers = append(timers, w.ScheduleFunc(Every(time.Duration(1+i%5)*60*time.Microsecond), func() { runs.Add(1) }))
				default:
					timers = append(timers, w.AfterFunc(time.Duration(i)*time.Millisecond, func() { runs.Add(1) }))
				}
			}
			var stop atomic.Bool
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for g := range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(uint64(g), 1))
					for !stop.Load() {
						tm := timers[r.IntN(len(timers))]
						switch r.IntN(4) {
						case 0:
							tm.Stop()
						case 1:
							tm.Reset(time.Duration(r.IntN(40)) * 50 * time.Microsecond)
						case 2:
							tm.ResetAt(w.clock.Now().Add(time.Duration(r.IntN(40)-5) * 50 * time.Microsecond))
						default:
							tm.Reset(time.Duration(r.IntN(4000)) * time.Millisecond)
						}
					}
				}()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					for _, tm := range timers {
						if err := checkTimer(tm); err != nil {
							errs <- err
							return
						}
					}
					if err := checkLanes(w); err != nil {
						errs <- err
						return
					}
					time.Sleep(time.Millisecond)
				}
			}()
			time.Sleep(500 * time.Millisecond)
			w.Stop() // wheel stopped while the workers go on
			time.Sleep(100 * time.Millisecond)
			stop.Store(true)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			require.NoError(t, checkLanes(w))
			for _, tm := range timers {
				require.NoError(t, checkTimer(tm))
				tm.Stop()
			}
			require.Zero(t, w.Len())
			for _, tm := range timers {
				require.Equal(t, statusIdle, status(tm.load()))
			}
		})
	}
}

// The top level flushes a far timer back into the same bucket and lane
// with the same state word: a Stop that read the word before still removes
// it correctly (an ABA that is harmless, since the check is under the
// lane's lock).
func TestStopWithStateSeenBeforeTopLevelWrap(t *testing.T) {
	w, mock := mockWheel(t, WithWheelSize(4), func(c *config) { c.levels = 2; c.lanes = 1 })
	var ran atomic.Int32
	tm := w.AfterFunc(1000*time.Millisecond, func() { ran.Add(1) })
	s0 := tm.load()
	require.Equal(t, statusPending, status(s0))
	l := w.laneByID(laneOf(s0))
	for range 40 {
		advance(t, w, mock, time.Millisecond)
	}
	// the level-1 span is 8 ticks: in 40 ticks the bucket came round several times
	s1 := tm.load()
	require.Equal(t, s0, s1, "same state word after the wrap")
	require.True(t, tm.unlink(s0, withStatus(s0, statusIdle)))
	l.mu.Lock()
	require.Empty(t, l.items)
	l.mu.Unlock()
	require.Zero(t, w.Len())
	advance(t, w, mock, 2*time.Second)
	require.Zero(t, ran.Load())
}
