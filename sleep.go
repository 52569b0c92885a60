package timingwheel

import (
	"time"

	"github.com/benbjohnson/clock"
)

// An alarm is how the driver sleeps until its next bucket is due or it is
// kicked. On the real clock, where the system has one, it waits on a
// wakeup (timerfd_linux.go), which wakes an idle program closer to the
// instant than a runtime timer does; otherwise it selects on a timer of
// the wheel's clock and on the wheel's kicks. Neither holds a thread.
//
// On the real clock the alarm is set again only when the instant changes
// or it went off (setting a wakeup is a system call). A mock clock's timer
// is set again on every pass, from the clock's now: a wait computed before
// a step would go off late by the step. The driver goroutine owns it.
type alarm struct {
	now    func() int64 // the wheel's clock, ns since start
	target int64        // the instant (ns since start) it is set for

	// With a wakeup: the fd is armed for target, and, while the program
	// is busy, its read deadline is set a backup interval after it (see
	// busyWaits and timerfd_linux.go).
	wk         *wakeup
	backup     time.Duration
	wkOn       bool // the fd is armed for target and has not gone off
	deadlineOn bool // the deadline is set for target and has not passed
	busy       int  // waits left that also set the deadline (see busyWaits)

	// Without one: a func timer of the wheel's clock that signals rang.
	timer   *clock.Timer
	rang    chan struct{}
	real    bool // the timer is on the real clock
	timerOn bool // the timer is set for target and has not gone off
}

// busyWaits is how many waits after a wake-up late by more than half the
// backup interval also set the wakeup's read deadline. Such a wake-up says
// the program is busy: its Ps did not poll the fd in time, but they check
// the deadline's runtime timer each time they schedule. An idle program,
// woken in time by the fd, does not pay for a runtime timer at each wait,
// which wakes another thread to poll for it.
const busyWaits = 256

// newAlarm returns an alarm on c, whose reading in ns since the wheel's
// start is now: with a wakeup if real is true and the system gives one,
// with a timer of c otherwise. backup is how long after each instant a
// busy program's read deadline is set. Call close when done with it.
func newAlarm(c clock.Clock, now func() int64, real bool, backup time.Duration) *alarm {
	a := &alarm{now: now, backup: backup, real: real}
	if real {
		a.wk = newWakeup()
	}
	if a.wk == nil {
		a.rang = make(chan struct{}, 1)
		a.timer = c.AfterFunc(time.Hour, func() {
			select {
			case a.rang <- struct{}{}:
			default:
			}
		})
		a.timer.Stop()
	}
	return a
}

// set makes the alarm go off at target, which is wait from now (wait > 0).
func (a *alarm) set(target int64, wait time.Duration) {
	if target != a.target {
		a.stop()
		a.target = target
	}
	if a.wk != nil {
		if !a.wkOn {
			a.wk.arm(wait)
			a.wkOn = true
		}
		if !a.deadlineOn && a.busy > 0 {
			a.wk.setDeadline(wait + a.backup)
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
}

// stop unsets the alarm. A wakeup armed before may still go off once,
// which the driver takes for a spurious wake-up: disarming it would cost a
// system call each time the wheel empties.
func (a *alarm) stop() {
	a.wkOn = false
	if a.deadlineOn {
		a.wk.setDeadline(0)
		a.deadlineOn = false
	}
	a.stopTimer()
}

// stopTimer stops the timer; a signal it sent already makes the driver go
// round once for nothing.
func (a *alarm) stopTimer() {
	if a.timerOn {
		a.timer.Stop()
	}
	a.timerOn = false
}

// wait blocks until the alarm goes off or the driver is kicked: a kick
// pokes the wakeup, or signals kicks.
func (a *alarm) wait(kicks <-chan struct{}) {
	if a.wk != nil {
		expired := a.wk.wait()
		if expired {
			a.wkOn = false // it went off
		} else {
			a.wk.setDeadline(0) // passed, or poked: a wait would return at once
			a.deadlineOn = false
		}
		a.busy = max(a.busy-1, 0)
		if (expired || a.wkOn) && a.now()-a.target > int64(a.backup)/2 {
			a.busy = busyWaits // woken late: the program is busy
		}
		return
	}
	select {
	case <-a.rang:
		a.timerOn = false
	case <-kicks:
	}
}

// close stops the alarm and releases its wakeup.
func (a *alarm) close() {
	a.stop()
	if a.wk != nil {
		a.wk.close()
	}
}
