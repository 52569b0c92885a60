package timingwheel

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

// TestSleeperOnAMockClockGoesOffIfTheClockPassedItsTarget: on a mock
// clock, the sleeper's timer is set from a reading of the clock; if the
// clock passes the target between that reading and the timer's Reset (a
// test's Add in another goroutine), the mock runs only the timers set
// before it moved, and the timer would wait for the next move. The
// sleeper reads the clock again and goes off at once.
func TestSleeperOnAMockClockGoesOffIfTheClockPassedItsTarget(t *testing.T) {
	target := int64(time.Second)
	var reads atomic.Int32
	now := func() int64 {
		if reads.Add(1) == 1 {
			return target - int64(time.Millisecond) // as set computes its wait
		}
		return target + 1 // moved past the target meanwhile
	}
	a := newSleeper(clock.NewMock(), now, false, 0)
	defer a.close()
	a.set(target, time.Millisecond)
	requireGoesOff(t, a)
}

// TestSleeperOnAMockClockGoesOffIfTheClockMovedPastItsTimer: a mock
// clock's Add runs the timers due by its new time, then sets that time. A
// timer set in between, due by then, is run by no move of the clock, and
// a reading taken in between still says the old time. The sleeper looks
// at the clock now and then while it waits, and goes off once it says
// the target passed.
func TestSleeperOnAMockClockGoesOffIfTheClockMovedPastItsTimer(t *testing.T) {
	target := int64(time.Second)
	var reads atomic.Int32
	now := func() int64 {
		if reads.Add(1) <= 2 { // set's two readings, inside the Add
			return target - int64(time.Millisecond)
		}
		return target + 1 // the Add set its time
	}
	a := newSleeper(clock.NewMock(), now, false, 0) // a mock that never moves: its timer never runs
	defer a.close()
	a.set(target, time.Millisecond)
	requireGoesOff(t, a)
}

// requireGoesOff fails the test unless a's wait returns within 5 s.
func requireGoesOff(t *testing.T, a *sleeper) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.wait(nil)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the sleeper did not go off: its timer waits for a move of the clock that already happened")
	}
}
