package timingwheel

import (
	"runtime"
	"sync/atomic"
	"time"
)

// Timer is a task or a channel send scheduled on a TimingWheel. It is
// created by AfterFunc, ScheduleFunc or NewTimer, and is safe for use by
// many goroutines at once.
type Timer struct {
	// state holds the status, the kind, the lane while pending and a
	// generation; see state.go. It is accessed atomically and comes first
	// to be 64-bit aligned.
	state uint64

	// when is the deadline in nanoseconds since the wheel started.
	when int64

	// C receives the time at which the timer fired. It is nil unless the
	// timer was made by NewTimer or After. As with time.Timer since Go
	// 1.23, no stale value is received after Stop or Reset returns.
	C <-chan time.Time

	f func()
	w *TimingWheel

	// pos is the timer's index in the lane it is in (named by its
	// state), guarded by that lane's lock.
	pos uint32
}

// Stop prevents the timer from firing. It returns true if the call stopped
// the timer, and false if the timer had already fired or been stopped. For
// every timer, exactly one of "its task ran" and "a Stop returned true"
// happens, however Stop races with firing.
//
// Like time.Timer.Stop, Stop does not wait for a task already started.
// A timer that fired but whose task the executor has not started yet is
// still stopped: Stop returns true and the task does not run. For a timer
// made by ScheduleFunc, Stop returns true if it prevented any further
// run, and no run starts after Stop returns. For a channel timer, Stop
// also returns true if it removed an undelivered value from C.
func (t *Timer) Stop() bool {
	if t == nil || t.w == nil {
		return false
	}
	if t.C != nil {
		return t.chanTimer().stop()
	}
	return t.stop()
}

func (t *Timer) stop() bool {
	for {
		s := t.load()
		switch status(s) {
		case statusPending:
			if t.unlinkIf(s, withStatus(s, statusIdle)) {
				return true
			}
		case statusMoving:
			// The driver holds it in a batch; it sees the change and
			// drops the timer without firing it.
			if t.cas(s, withStatus(s, statusCancelled)) {
				t.w.outside.Add(-1)
				return true
			}
		case statusRunning, statusExecuting:
			// A periodic timer between runs: no further run starts.
			if t.cas(s, withStatus(s, statusIdle)) {
				return true
			}
		case statusMutating, statusFiring:
			// Another owner is mid-Stop or mid-Reset, or the driver is
			// mid-send: each finishes in a few instructions.
			runtime.Gosched()
		default:
			return false
		}
	}
}

// unlinkIf changes t's state from s, a pending state, to next and takes t
// out of the lane s names, if any, all under the lane's lock, where a
// pending state naming the lane means t is in it (see state.go). It
// returns false, doing nothing, if t's state is no longer s.
func (t *Timer) unlinkIf(s, next uint64) bool {
	id := laneOf(s)
	if id == 0 {
		// Pending in no lane: made on a stopped wheel.
		if !t.cas(s, next) {
			return false
		}
		t.w.outside.Add(-1)
		return true
	}
	l := t.w.laneByID(id)
	l.mu.Lock()
	if t.load() != s {
		l.mu.Unlock()
		return false
	}
	// Under l's lock a state pending in l cannot change (every way out of
	// it takes the lock), so t is ours. Remove it first and only then
	// publish next: once t is idle, a Reset may push it into another lane
	// and write its pos.
	l.remove(t)
	l.pending--
	t.store(next)
	l.mu.Unlock()
	return true
}

// Reset changes the timer to fire after duration d, measured from now. It
// returns true if the timer was pending (including fired with its task
// not started yet, which then does not run; or, for a channel timer, with
// an undelivered value), and false if it had fired or been stopped; in
// both cases the timer is armed again and does not fire at its old
// deadline.
//
// For a timer made by ScheduleFunc, the next run is at now+d and the runs
// after it follow the Scheduler from there.
//
// A timer reset to a deadline already past fires on the driver's next
// pass. If its task, run inline on the driver goroutine, resets it so on
// every run, it runs once per pass, after the other timers due by then,
// and Sync and the wheel's Stop are still served.
func (t *Timer) Reset(d time.Duration) bool {
	if t == nil || t.w == nil {
		return false
	}
	when, due := t.w.deadline(d)
	if t.C != nil {
		return t.chanTimer().rearm(when, due)
	}
	return t.rearm(when, due, nil)
}

// ResetAt is Reset with an absolute deadline, a time on the wheel's clock
// (see AfterFuncAt). A deadline already past fires the timer as soon as
// possible.
func (t *Timer) ResetAt(deadline time.Time) bool {
	if t == nil || t.w == nil {
		return false
	}
	if t.C != nil {
		return t.chanTimer().rearm(t.w.nsAt(deadline), false)
	}
	return t.rearm(t.w.nsAt(deadline), false, nil)
}

// rearm makes t pending at when (ns since start), whatever its status;
// due says the deadline has already passed. c is the channel of a channel
// timer, drained once t is owned, so that it keeps no stale value.
func (t *Timer) rearm(when int64, due bool, c <-chan time.Time) bool {
	var owned uint64
	active := false
	for {
		s := t.load()
		st := status(s)
		if st != statusIdle && st != statusPending && st != statusRunning && st != statusExecuting {
			// Moving, cancelled, mutating or firing: the owner is about
			// to finish with it.
			runtime.Gosched()
			continue
		}
		owned = nextGeneration(s, statusMutating)
		if st == statusPending && t.unlinkIf(s, owned) || st != statusPending && t.cas(s, owned) {
			active = st != statusIdle
			break
		}
	}
	if c != nil && drain(c) {
		active = true
	}
	if kind(owned) == kindPeriodic {
		atomic.StoreInt64(&t.when, when) // its run may be reading it; see periodic.run
	} else {
		t.when = when // read only by whoever owns the timer next
	}
	t.w.armOwned(t, owned, true, due)
	return active
}

func drain(c <-chan time.Time) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
