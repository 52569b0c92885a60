package timingwheel

import (
	"time"

	"github.com/benbjohnson/clock"
)

// An alarm wakes the driver at the instant its next bucket is due: on the
// real clock where the system has one, with a wakeup (see
// timerfd_linux.go), which wakes an idle program closer to the instant than
// a runtime timer does; otherwise with a timer of the wheel's clock.
// Neither holds a thread while it waits.
//
// Beside a wakeup, the clock timer is a backstop, set a grain later: the
// runtime looks at a wakeup's file descriptor only when a P has nothing
// else to run (or every 10ms), while every P checks its timers each time
// it schedules, so on a busy program the timer may go off first. Set later
// than the wakeup, it does not go off on an idle one, and moving it later
// at each instant costs no interruption of the runtime's poller. It is a
// func timer that signals a channel: a channel timer would be added to
// the runtime's heap, interrupting the poller, at every select on it.
//
// The driver loops more often than its next instant changes (each new
// earliest bucket, Sync or spurious wake-up is a pass), so on the real
// clock the alarm sets its timers again only when the instant changes or
// they have fired: setting a wakeup is a system call. A mock clock's timer
// is set again on every pass, from the clock's now at that moment: the
// clock moves in steps, at any time, and a wait computed before a step
// would go off late by the step. It is owned by the driver goroutine.
type alarm struct {
	timer   *clock.Timer  // signals rang when it goes off
	rang    chan struct{} // signalled without blocking
	now     func() int64  // the wheel's clock, ns since start
	real    bool          // timer is on the real clock
	wk      *wakeup
	backup  time.Duration // how long after target timer goes off, beside a wakeup
	target  int64         // the instant (ns since start) they are set for
	timerOn bool          // timer is set for target and has not gone off
	wkOn    bool          // wk is set for target and has not fired
}

// newAlarm returns an alarm on c, whose now (ns since the wheel's start)
// is now, with a wakeup if real is true and the system gives one, and its
// clock timer then backup later. Call close when done with it.
func newAlarm(c clock.Clock, now func() int64, real bool, backup time.Duration) *alarm {
	a := &alarm{rang: make(chan struct{}, 1), now: now, real: real}
	a.timer = c.AfterFunc(time.Hour, a.ring)
	a.timer.Stop()
	if real {
		a.wk = newWakeup()
	}
	if a.wk != nil {
		a.backup = backup
	}
	return a
}

func (a *alarm) ring() {
	select {
	case a.rang <- struct{}{}:
	default:
	}
}

// set makes the alarm go off at target, which is wait from now (wait > 0).
func (a *alarm) set(target int64, wait time.Duration) {
	if target != a.target {
		a.stop()
		a.target = target
	}
	if !a.real {
		// Set it again, from the clock's now this moment: it may have
		// moved since wait was computed, or since the timer was set.
		a.stopTimer()
		wait = time.Duration(target - a.now())
	}
	if !a.timerOn {
		a.timer.Reset(wait + a.backup)
		a.timerOn = true
	}
	if !a.wkOn && a.wk != nil {
		a.wk.arm(wait)
		a.wkOn = true
	}
}

// stop stops the clock timer. A wakeup set before may still go off once,
// which the driver takes for a spurious wake-up: unsetting it would cost a
// system call each time the wheel empties.
func (a *alarm) stop() {
	a.stopTimer()
	a.wkOn = false
}

// stopTimer stops the clock timer; a signal it sent already makes the
// driver go round once for nothing.
func (a *alarm) stopTimer() {
	if a.timerOn {
		a.timer.Stop()
	}
	a.timerOn = false
}

// timerC is the channel the clock timer signals; call timerFired after
// receiving from it.
func (a *alarm) timerC() <-chan struct{} { return a.rang }

func (a *alarm) timerFired() { a.timerOn = false }

// wakeupC is the channel the wakeup signals, nil (never ready) without
// one; call wakeupFired with the time after receiving from it.
func (a *alarm) wakeupC() <-chan struct{} { return a.wk.channel() }

// wakeupFired takes note of a signal of the wakeup at now (ns since
// start). A signal before the target is stale, from an instant set
// before (the wakeup never fires early): typically the clock timer went
// off first, and the driver has set the alarm for its next instant since.
// The wakeup is still set for that one, and is not set again.
func (a *alarm) wakeupFired(now int64) {
	if now >= a.target {
		a.wkOn = false
	}
}

// close stops the alarm and releases its wakeup.
func (a *alarm) close() {
	a.stop()
	a.wk.close()
}
