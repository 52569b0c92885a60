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
//	bits 3-4   kind:   func, channel, periodic or a Ticker's; fixed at creation
//	bits 5-35  lane:   while pending, the lane the timer is in
//
// The statuses:
//
//	new      made, not shared with any other goroutine yet
//	idle     not scheduled: stopped, or fired and its task started
//	pending  in the lane its state names, waiting for its deadline
//	fired    the driver fired it; its task is handed over, not started
//	running  a periodic timer's run is in progress
//	locked   idle and owned by a Reset or a periodic re-arm, which makes
//	         it pending again
//
// Every change of a state word is made by move, which a build with the
// tag timingwheel_debug checks against this table, function included
// (transitions_test.go holds the table to the one in move's check):
//
//	from     to       function        under
//	new      pending  insert          the lane's lock (AfterFunc, NewTimer, ScheduleFunc)
//	new      fired    handBeforeStart the wheel's life lock
//	idle     locked   own             the timer's lock and a CAS (Reset)
//	pending  idle     unlink          the lane's lock (Stop)
//	pending  locked   unlink          the timer's lock, then the lane's (own)
//	pending  pending  cascade         the lane's lock, then the target lane's (a Ticker's next tick too)
//	pending  fired    fire            the lane's lock
//	pending  idle     fire            the lane's lock, after a channel timer's send
//	fired    idle     runFired        a CAS: its task starts if it wins
//	fired    idle     stop            a CAS
//	fired    pending  keepFired       the due lane's lock and a CAS (a stopped wheel)
//	fired    running  run             the timer's lock and a CAS (a periodic run starts)
//	fired    locked   own             the timer's lock and a CAS
//	running  idle     stop            a CAS
//	running  idle     run             the timer's lock and a CAS (the schedule ended)
//	running  locked   run             the timer's lock and a CAS (the re-arm)
//	running  locked   own             the timer's lock and a CAS
//	locked   pending  insert          the timer's lock, then the lane's
//
// A pending timer's state changes only under its lane's lock, and a lane
// holds exactly the timers pending in it: whoever holds a lane's lock owns
// its timers. That is where the race between Stop and firing is decided,
// as Kafka decides it in a bucket's list: the driver fires and cascades
// timers while holding their lane's lock, and a Stop that takes the lock
// after it sees the timer fired or moved. The other place is the CAS out
// of fired: exactly one of a task's start and a Stop or Reset wins it.
//
// The lock order is: a periodic timer's run lock (periodic.mu) or a
// Ticker's lock (Ticker.mu, held by Reset), the wheel's life lock (Start,
// Stop, handBeforeStart), the driver's handing lock (executor.go), a
// timer's lock, a lane's lock, a second lane's lock (only the driver holds
// two lanes: when it cascades a timer to a finer level, or links a
// Ticker's core again in any level, so two lanes never deadlock), the
// delay queue's lock. The Sync
// requests' lock (syncMu) is taken with none of these held. A timer's lock
// (see mutex) is held by Reset and by a periodic run's start and re-arm,
// for O(1) work; Stop takes it only to wait for such an owner. The driver
// never takes it.

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

// How move changes a state word.
const (
	byCAS     = iota // a CAS, which fails if the state is no longer old
	byOwner          // a store: the caller owns t (see the table above)
	byCreator        // a store to a new timer, shared with no one yet
)

// move changes t's state from old to new, as how says, and reports
// whether it did. Every change of a timer's state is made here; with the
// tag timingwheel_debug it panics on a change the table above lacks.
func (t *Timer) move(old, new uint64, how int) bool {
	if debugTransitions {
		checkMove(old, new, how)
	}
	switch how {
	case byCAS:
		return atomic.CompareAndSwapUint64(&t.state, old, new)
	case byOwner:
		atomic.StoreUint64(&t.state, new)
	default:
		t.state = new
	}
	return true
}

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
// many goroutines at once. A Timer must not be copied: use the *Timer it
// was made as (go vet reports a copy; Stop or Reset of a copy panics).
type Timer struct {
	_     noCopy
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
			if t.move(s, withStatus(s, statusIdle), byCAS) {
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
	if int(t.pos) >= len(l.items) || l.items[t.pos] != t {
		l.mu.Unlock()
		panic(errCopied) // a copy of a pending timer: its lane holds the original
	}
	l.remove(t)
	l.pending--
	t.move(s, next, byOwner) // after remove: once t is not pending, a Reset may link it elsewhere
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
		} else if t.move(s, owned, byCAS) {
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

// errCopied is what Stop and Reset panic with when called on a copy of a
// Timer.
const errCopied = "timingwheel: Stop or Reset called on a copy of a Timer; use the *Timer it was made as"

// noCopy makes go vet's copylocks check report a copied Timer; it takes no
// room, as a Timer's first field.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}
