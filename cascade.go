package timingwheel

import "math"

// Cascades in slices.
//
// A coarse bucket comes due one of its own ticks before its range starts
// (see overflow.go): 256ms ahead at level 1 with the defaults, 65s at
// level 2. Moving all of its timers down at once keeps the driver busy
// for milliseconds when the bucket is large: 51,000 timers (a quarter
// second of 200,000 a second) took 2.4-3.7ms in a test, plus the page
// faults of the level-0 lanes they fill, and a thread busy that long is
// the one the kernel preempts at its next tick. With 200,000 timers due across a
// second, the worst lateness of 5 runs in 6 (3.4-5.5ms) fell at the
// instants such cascades began.
//
// So while more than half of that lead is left, the driver moves at most
// cascadeSlice timers per look at the bucket and looks again at the next
// grain, between the level-0 buckets it fires; once half the lead is
// spent, it moves whatever is left at once, as a single look always did.
// The timers wait in the coarse bucket meanwhile, pending as before: Len,
// Stop and Reset see no difference, and none is due before the range
// starts.

// cascadeSlice is how many timers the driver moves per look at a coarse
// bucket whose range is still far ahead: 50-75µs of work.
const cascadeSlice = 1024

// cascadeBudget returns how many timers the driver may move out of b, a
// bucket it is flushing at now (ns since start), in this look: all of
// them for a level-0 or the due bucket, and for a coarse bucket whose
// range starts within half a tick of its level (or whose range is not
// the next one, as for a bucket armed from a stale clock), which is
// always safe.
func (w *TimingWheel) cascadeBudget(b *bucket, now int64) int {
	if !b.coarse {
		return math.MaxInt
	}
	code, slot, _ := splitLaneID(b.lanes[0].id)
	lv := w.levels[code-1].Load()
	nowTick := now / w.tick
	next := nowTick>>lv.shift + 1 // the level's next tick: the range cascading now
	if next&w.mask != int64(slot) {
		return math.MaxInt
	}
	start, half := next<<lv.shift, int64(1)<<lv.shift/2
	if nowTick >= start-half {
		return math.MaxInt
	}
	return cascadeSlice
}
