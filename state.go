package timingwheel

import "sync/atomic"

// A timer's state word packs four things:
//
//	bits 0-2   status: who owns the timer and what it is doing
//	bits 3-4   kind:   func, channel or periodic; fixed at creation
//	bits 5-35  lane:   while pending, the ID of the lane the timer is in
//	           (0 for none); 0 in every other status
//	bits 36-63 generation: bumped by every Reset and re-arm, so that a
//	           periodic run's compare-and-swap on a stale view fails
//
// Every transition is an atomic change of this word, which is what makes
// Stop, Reset and firing race safely: exactly one of them wins. A state
// pending in a lane changes only under that lane's lock: a timer is added
// to the lane and then made pending in it, and it is removed from the lane
// before (in the same critical section as) the change that takes it out of
// pending. So a timer in a lane is pending in it, and whoever holds the
// lane's lock and sees a state pending in that lane owns the timer until
// it unlocks: Stop removes it and stores idle in one critical section.
// Lock-free transitions (Stop of a moving or periodic timer, Reset of one
// that is not pending) are compare-and-swaps. Whoever moves a timer out
// of pending or idle (to mutating or moving) owns it until it stores the
// next status, and only an owner writes its deadline; the lane's lock
// guards its items and each timer's position in them.
//
//	idle      not scheduled: new, fired, or stopped
//	pending   in the bucket lane the word names, or in none (lane 0) if
//	          its wheel was stopped
//	moving    taken out of a bucket by the driver, which will fire it or
//	          link it again; Stop may still cancel it
//	cancelled stopped while moving: the driver drops it and sets idle
//	mutating  owned by a Stop, Reset or periodic re-arm in progress
//	firing    the driver is sending on a channel timer's C
//	running   fired; its task (an AfterFunc task or a periodic run) is
//	          handed over but has not started yet
//	executing a periodic timer's run is in progress
const (
	statusIdle uint64 = iota
	statusPending
	statusMoving
	statusMutating
	statusFiring
	statusRunning
	statusExecuting
	statusCancelled

	statusMask = 7
)

const (
	kindFunc     uint64 = 0 << 3
	kindChan     uint64 = 1 << 3
	kindPeriodic uint64 = 2 << 3

	kindMask = 3 << 3

	laneShift = 5
	laneMask  = (1<<31 - 1) << laneShift

	generationOne = 1 << 36
)

// Every lane ID fits the lane bits: this fails to compile otherwise.
const _ = uint64(laneMask>>laneShift) - (laneIDLinked<<1 - 1)

func status(s uint64) uint64 { return s & statusMask }

func kind(s uint64) uint64 { return s & kindMask }

// withStatus returns s with status st, in no lane.
func withStatus(s, st uint64) uint64 { return s&^(statusMask|laneMask) | st }

// pendingIn returns s with status pending in the lane whose ID is id.
func pendingIn(s uint64, id uint32) uint64 {
	return withStatus(s, statusPending) | uint64(id)<<laneShift
}

// laneOf returns the ID of the lane a pending timer is in, or 0.
func laneOf(s uint64) uint32 { return uint32(s & laneMask >> laneShift) }

// nextGeneration returns s with the next generation and status st, in no
// lane.
func nextGeneration(s, st uint64) uint64 { return withStatus(s+generationOne, st) }

func (t *Timer) load() uint64 { return atomic.LoadUint64(&t.state) }

func (t *Timer) cas(old, new uint64) bool { return atomic.CompareAndSwapUint64(&t.state, old, new) }

func (t *Timer) store(s uint64) { atomic.StoreUint64(&t.state, s) }
