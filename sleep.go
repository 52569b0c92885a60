package timingwheel

import (
	"time"

	"github.com/benbjohnson/clock"
)

// An sleeper is how the driver sleeps until its next bucket is due or it is
// woken. On the real clock, where the system has one, it waits on a
// timerfd (timerfd_linux.go), which wakes an idle program closer to the
// instant than a runtime timer does; otherwise it selects on a timer of
// the wheel's clock and on the wheel's wakes. Neither holds a thread.
//
// On the real clock the sleeper is set again only when the instant changes
// or it went off (setting a timerfd is a system call). A mock clock's timer
// is set again on every pass, from the clock's now: a wait computed before
// a step would go off late by the step; and while it waits, the sleeper
// also reads the mock clock every mockLook of real time, for a step its
// timer missed. The driver goroutine owns it.
type sleeper struct {
	now    func() int64 // the wheel's clock, ns since start
	target int64        // the instant (ns since start) it is set for

	// With a timerfd: the fd is armed for target, and, while the program
	// is busy, its read deadline is set a backup interval after it (see
	// busyWaits and timerfd_linux.go).
	tfd        *timerfd
	backup     time.Duration
	armed      bool // the fd is armed for target and has not gone off
	deadlineOn bool // the deadline is set for target and has not passed
	busy       int  // waits left that also set the deadline (see busyWaits)

	// Without one: a func timer of the wheel's clock that signals expired.
	timer   *clock.Timer
	expired chan struct{}
	real    bool // the timer is on the real clock
	mock    bool // the clock is a *clock.Mock (see wait)
	timerOn bool // the timer is set for target and has not gone off
}

// busyWaits is how many waits after a wake-up late by more than half the
// backup interval also set the timerfd's read deadline. Such a wake-up says
// the program is busy: its Ps did not poll the fd in time, but they check
// the deadline's runtime timer each time they schedule. An idle program,
// woken in time by the fd, does not pay for a runtime timer at each wait,
// which wakes another thread to poll for it.
const busyWaits = 256

// newSleeper returns an sleeper on c, whose reading in ns since the wheel's
// start is now: with a timerfd if real is true and the system gives one,
// with a timer of c otherwise. backup is how long after each instant a
// busy program's read deadline is set. Call close when done with it.
func newSleeper(c clock.Clock, now func() int64, real bool, backup time.Duration) *sleeper {
	_, mock := c.(*clock.Mock)
	a := &sleeper{now: now, backup: backup, real: real, mock: mock}
	if real {
		a.tfd = newTimerfd()
	}
	if a.tfd == nil {
		a.expired = make(chan struct{}, 1)
		a.timer = c.AfterFunc(time.Hour, func() {
			select {
			case a.expired <- struct{}{}:
			default:
			}
		})
		a.timer.Stop()
	}
	return a
}

// set makes the sleeper go off at target, which is wait from now (wait > 0).
func (a *sleeper) set(target int64, wait time.Duration) {
	if target != a.target {
		a.stop()
		a.target = target
	}
	if a.tfd != nil {
		if !a.armed {
			a.tfd.arm(wait)
			a.armed = true
		}
		if !a.deadlineOn && a.busy > 0 {
			a.tfd.setDeadline(wait + a.backup)
			a.deadlineOn = true
		}
		return
	}
	if !a.real {
		// Set it again, from the clock's now this moment: it may have
		// moved since wait was computed, or since the timer was set.
		a.stopTimer()
		wait = time.Duration(target - a.now())
	}
	if !a.timerOn {
		a.timer.Reset(wait)
		a.timerOn = true
	}
	if !a.real && a.now() >= target {
		// The clock passed target between the reading above and the
		// Reset: a mock clock moved by another goroutine (a test's Add)
		// runs only the timers set before it moved, so this one would
		// wait for the next move. Go off now instead.
		select {
		case a.expired <- struct{}{}:
		default:
		}
	}
}

// stop unsets the sleeper. A timerfd armed before may still go off once,
// which the driver takes for a spurious wake-up: disarming it would cost a
// system call each time the wheel empties.
func (a *sleeper) stop() {
	a.armed = false
	if a.deadlineOn {
		a.tfd.setDeadline(0)
		a.deadlineOn = false
	}
	a.stopTimer()
}

// stopTimer stops the timer; a signal it sent already makes the driver go
// round once for nothing.
func (a *sleeper) stopTimer() {
	if a.timerOn {
		a.timer.Stop()
	}
	a.timerOn = false
}

// wait blocks until the sleeper goes off or the driver is woken: a wake
// wakes the timerfd, or signals wakes.
func (a *sleeper) wait(wakes <-chan struct{}) {
	if a.tfd != nil {
		expired := a.tfd.wait()
		if expired {
			a.armed = false // it went off
		} else {
			a.tfd.setDeadline(0) // passed, or woken: a wait would return at once
			a.deadlineOn = false
		}
		a.busy = max(a.busy-1, 0)
		if (expired || a.armed) && a.now()-a.target > int64(a.backup)/2 {
			a.busy = busyWaits // woken late: the program is busy
		}
		return
	}
	// A mock clock's Add runs the timers due by its new time, then sets
	// that time: a timer set in between, due by then, waits for the next
	// move, and so would the driver. Look at the clock now and then too.
	var look <-chan time.Time
	if a.mock && a.timerOn {
		t := time.NewTicker(mockLook)
		defer t.Stop()
		look = t.C
	}
	for {
		select {
		case <-a.expired:
			a.timerOn = false
			return
		case <-wakes:
			return
		case <-look:
			if a.now() >= a.target {
				a.stopTimer()
				return
			}
		}
	}
}

// mockLook is how often, in real time, the sleeper on a mock clock looks
// at the clock while it waits (see wait).
const mockLook = 10 * time.Millisecond

// close stops the sleeper and releases its timerfd.
func (a *sleeper) close() {
	a.stop()
	if a.tfd != nil {
		a.tfd.close()
	}
}
