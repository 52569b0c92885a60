package timingwheel

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// A timer's life, and who may change it.
//
// A Timer's state word holds its status, its kind, a lock bit and, while
// it is pending, the ID of the lane it is in:
//
//	bits 0-1   status: idle, pending, fired or running
//	bit  2     locked: a Reset or a periodic re-arm owns the timer
//	bits 3-4   kind:   func, channel or periodic; fixed at creation
//	bits 5-35  lane:   while pending, the lane the timer is in
//
// The statuses:
//
//	idle     not scheduled: new, stopped, or fired and its task started
//	pending  in the lane its state names, waiting for its deadline
//	fired    the driver fired it; its task is handed over, not started
//	running  a periodic timer's run is in progress
//
// The transitions, and what each happens under:
//
//	pending -> idle     Stop                       the lane's lock
//	pending -> pending  the driver cascades it     the lane's lock, then the target lane's
//	pending -> fired    the driver fires it        the lane's lock
//	pending -> idle     the driver sends on C      the lane's lock, after the send
//	fired   -> idle     its task starts            a CAS: runs the task if it wins
//	fired   -> running  a periodic run starts      the timer's lock and a CAS
//	fired   -> pending  a stopped wheel keeps it   the due lane's lock and a CAS
//	fired,
//	running -> idle     Stop                       a CAS
//	any     -> locked   Reset, periodic re-arm     the timer's lock, and the lane's
//	                                               lock or a CAS
//	locked  -> pending  the same Reset or re-arm   the timer's lock, then the lane's
//
// A pending timer's state changes only under its lane's lock, and a lane
// holds exactly the timers pending in it: whoever holds a lane's lock owns
// its timers. That is where the race between Stop and firing is decided,
// as Kafka decides it in a bucket's list: the driver fires and cascades
// timers while holding their lane's lock, and a Stop that takes the lock
// after it sees the timer fired or moved. The other place is the CAS out
// of fired: exactly one of a task's start and a Stop or Reset wins it.
//
// The lock order is: a timer's periodic run lock, the timer's lock, a
// lane's lock, a finer lane's lock (only the driver holds two lanes),
// the delay queue's lock. A timer's lock (see mutex) is held by Reset and
// by a periodic run's start and re-arm, for O(1) work; Stop takes it
// only to wait for such an owner. The driver never takes it.

const (
	statusIdle uint64 = iota
	statusPending
	statusFired
	statusRunning

	statusMask = 3
	locked     = 1 << 2

	kindFunc     uint64 = 0 << 3
	kindChan     uint64 = 1 << 3
	kindPeriodic uint64 = 2 << 3
	kindMask            = 3 << 3

	laneShift = 5
	laneMask  = (1<<31 - 1) << laneShift
)

// Every lane ID fits the lane bits: this fails to compile otherwise.
const _ = uint64(laneMask>>laneShift) - (laneIDLinked<<1 - 1)

func status(s uint64) uint64 { return s & statusMask }

func kind(s uint64) uint64 { return s & kindMask }

// withStatus returns s with status st, unlocked and in no lane.
func withStatus(s, st uint64) uint64 { return s&kindMask | st }

// pendingIn returns s pending in the lane whose ID is id.
func pendingIn(s uint64, id uint32) uint64 {
	return withStatus(s, statusPending) | uint64(id)<<laneShift
}

// laneOf returns the ID of the lane a pending timer is in.
func laneOf(s uint64) uint32 { return uint32(s & laneMask >> laneShift) }

func (t *Timer) load() uint64 { return atomic.LoadUint64(&t.state) }

func (t *Timer) cas(old, new uint64) bool { return atomic.CompareAndSwapUint64(&t.state, old, new) }

func (t *Timer) store(s uint64) { atomic.StoreUint64(&t.state, s) }

// timerLocks are the timers' locks, one chosen by a timer's address: a
// Timer (48 bytes, a size class of the allocator) has no room for a mutex,
// and two timers that share one wait only for each other's O(1) work.
var timerLocks [256]struct {
	sync.Mutex
	_ [64 - unsafe.Sizeof(sync.Mutex{})]byte
}

// mutex returns t's lock.
func (t *Timer) mutex() *sync.Mutex {
	h := uint64(uintptr(unsafe.Pointer(t))>>4) * 0x9E3779B97F4A7C15 >> 56
	return &timerLocks[h].Mutex
}

// Timer is a task or a channel send scheduled on a TimingWheel. It is
// created by AfterFunc, ScheduleFunc or NewTimer, and is safe for use by
// many goroutines at once.
type Timer struct {
	state uint64 // see above; atomic, and first to be 64-bit aligned
	when  int64  // the deadline, ns since the wheel's start

	// C receives the time at which the timer fired. It is nil unless the
	// timer was made by NewTimer or After. As with time.Timer since Go
	// 1.23, no stale value is received after Stop or Reset returns.
	C <-chan time.Time

	f   func()
	w   *TimingWheel
	pos uint32 // the index in its lane, guarded by the lane's lock
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
	if kind(t.load()) == kindChan {
		return t.chanTimer().stop()
	}
	return t.stop()
}

func (t *Timer) stop() bool {
	for {
		s := t.load()
		switch {
		case s&locked != 0:
			// A Reset or re-arm holds t's lock for O(1) work: wait for it.
			mu := t.mutex()
			mu.Lock()
			mu.Unlock() // an empty critical section: waiting is the point
		case status(s) == statusPending:
			if t.unlink(s, withStatus(s, statusIdle)) {
				return true
			}
		case status(s) == statusIdle:
			return false
		default: // fired or running
			if t.cas(s, withStatus(s, statusIdle)) {
				return true
			}
		}
		// The driver moved or fired t, or its task started: look again.
	}
}

// unlink takes t out of its lane and changes its state from s, pending,
// to next, under the lane's lock; false, doing nothing, if t's state is no
// longer s.
func (t *Timer) unlink(s, next uint64) bool {
	l := t.w.laneByID(laneOf(s))
	l.mu.Lock()
	if t.load() != s {
		l.mu.Unlock()
		return false
	}
	l.remove(t)
	l.pending--
	t.store(next) // after remove: once t is not pending, a Reset may link it elsewhere
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
	return t.reset(when, due)
}

// ResetAt is Reset with an absolute deadline, a time on the wheel's clock
// (see AfterFuncAt). A deadline already past fires the timer as soon as
// possible.
func (t *Timer) ResetAt(deadline time.Time) bool {
	if t == nil || t.w == nil {
		return false
	}
	return t.reset(t.w.nsAt(deadline), false)
}

func (t *Timer) reset(when int64, due bool) bool {
	if kind(t.load()) == kindChan {
		h := t.chanTimer()
		active := h.core.rearm(when, due, h.C)
		runtime.KeepAlive(h) // C stays reachable: no cleanup stops the core meanwhile
		return active
	}
	return t.rearm(when, due, nil)
}

// rearm makes t pending at when (ns since start), whatever its status,
// and reports whether t was active; due says when has passed. c, a
// channel timer's channel, is drained once t is owned: no stale value.
func (t *Timer) rearm(when int64, due bool, c <-chan time.Time) bool {
	mu := t.mutex()
	mu.Lock()
	defer mu.Unlock()
	owned, active := t.own()
	if c != nil && drain(c) {
		active = true
	}
	t.when = when
	t.w.insert(t, owned, due)
	return active
}

// own takes t, whatever its status, for the holder of its lock: out of its
// lane if pending, and locked, so that a Stop meanwhile waits. It returns
// the state it set and whether t was active (not idle).
func (t *Timer) own() (owned uint64, active bool) {
	for {
		s := t.load()
		owned = withStatus(s, statusIdle) | locked
		if status(s) == statusPending {
			if t.unlink(s, owned) {
				return owned, true
			}
		} else if t.cas(s, owned) {
			return owned, status(s) != statusIdle
		}
	}
}

func drain(c <-chan time.Time) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
