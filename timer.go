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
	// state holds the status, the kind and a generation; see state.go. It
	// is accessed atomically and comes first to be 64-bit aligned.
	state uint64

	// when is the deadline in nanoseconds since the wheel started.
	when int64

	// C receives the time at which the timer fired. It is nil unless the
	// timer was made by NewTimer or After. As with time.Timer since Go
	// 1.23, no stale value is received after Stop or Reset returns.
	C <-chan time.Time

	f func()
	w *TimingWheel

	// The lane the timer is in (0 if none) and its index there. The
	// lane's lock guards pos; laneID is read only by the timer's owner
	// (see state.go).
	laneID uint32
	pos    uint32
}

// Stop prevents the timer from firing. It returns true if the call stopped
// the timer, and false if the timer had already fired or been stopped. For
// every timer, exactly one of "its task ran" and "a Stop returned true"
// happens, however Stop races with firing.
//
// Like time.Timer.Stop, Stop does not wait for a task already started.
// For a timer made by ScheduleFunc, Stop returns true if it prevented any
// further run, and no run starts after Stop returns. For a channel timer,
// Stop also returns true if it removed an undelivered value from C.
func (t *Timer) Stop() bool {
	if t == nil || t.w == nil {
		return false
	}
	stopped := t.stop()
	if t.C != nil && drain(t.C) {
		stopped = true
	}
	return stopped
}

func (t *Timer) stop() bool {
	for {
		s := t.load()
		switch status(s) {
		case statusPending:
			if t.cas(s, withStatus(s, statusMutating)) {
				t.unlink()
				t.store(withStatus(s, statusIdle))
				return true
			}
		case statusMoving:
			// The driver holds it in a batch; it sees the change and
			// drops the timer without firing it.
			if t.cas(s, withStatus(s, statusCancelled)) {
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

// unlink removes t from its lane, if it is in one. The caller owns t,
// having moved it out of pending, so nobody else moves it meanwhile.
func (t *Timer) unlink() {
	if t.laneID != 0 {
		l := t.w.laneByID(t.laneID)
		l.mu.Lock()
		l.remove(t)
		l.mu.Unlock()
	}
}

// Reset changes the timer to fire after duration d, measured from now. It
// returns true if the timer was pending (or, for a channel timer, had an
// undelivered value), and false if it had fired or been stopped; in both
// cases the timer is armed again and does not fire at its old deadline.
//
// For a timer made by ScheduleFunc, the next run is at now+d and the runs
// after it follow the Scheduler from there.
func (t *Timer) Reset(d time.Duration) bool {
	if t == nil || t.w == nil {
		return false
	}
	return t.rearm(t.w.deadline(d))
}

// ResetAt is Reset with an absolute deadline, a time on the wheel's clock
// (see AfterFuncAt). A deadline already past fires the timer as soon as
// possible.
func (t *Timer) ResetAt(deadline time.Time) bool {
	if t == nil || t.w == nil {
		return false
	}
	return t.rearm(t.w.nsAt(deadline), false)
}

// rearm makes t pending at when (ns since start), whatever its status;
// due says the deadline has already passed.
func (t *Timer) rearm(when int64, due bool) bool {
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
		if t.cas(s, owned) {
			if st == statusPending {
				t.unlink()
			}
			active = st != statusIdle
			break
		}
	}
	if t.C != nil && drain(t.C) {
		active = true
	}
	w := t.w
	if w.stopped.Load() {
		// A stopped wheel never fires: park the timer pending in no lane,
		// so that a Stop still reports that it kept it from running.
		t.store(withStatus(owned, statusPending))
		return active
	}
	atomic.StoreInt64(&t.when, when) // a periodic run may read it; see periodic.run
	w.insertOwned(t, withStatus(owned, statusPending), true, due)
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
