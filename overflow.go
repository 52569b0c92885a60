package timingwheel

import "math"

// The hierarchy of wheels. Level 0 has size buckets of one tick each. Each
// overflow level i > 0 has size buckets of (size/2)^i ticks each, so a
// bucket of level i spans half of level i-1: the levels overlap twice.
// Under the defaults (1ms tick, 512 buckets) six levels cover every deadline:
//
//	level  bucket width  level span
//	0      1 ms          512 ms
//	1      256 ms        2.2 min
//	2      65.5 s        9.3 h
//	3      4.7 h         99 days
//	4      49.7 days     70 years
//	5      34.8 years    beyond the 292 years of int64 ns
//
// The overlap lets the driver cascade a coarse bucket one of its own ticks
// before its range starts, when every timer in it fits the finer level.
// A timer beyond the top level's span is put in the slot its deadline maps
// to and placed again each time that slot comes round.
//
// Placement takes no lock on the wheel: a timer placed from a stale clock
// is in a bucket due no later than its deadline, and the driver fires only
// the timers whose deadline has passed.

// maxLevels bounds the hierarchy; beyond it the top level wraps round.
const maxLevels = 64

// A level is one wheel of the hierarchy.
type level struct {
	shift   uint // log2 of the level's bucket width, in ticks
	buckets []bucket
}

// level returns level i, creating it the first time a timer needs it.
func (w *TimingWheel) level(i int) *level {
	if lv := w.levels[i].Load(); lv != nil {
		return lv
	}
	lv := &level{shift: uint(i) * (w.sizeShift - 1), buckets: newBuckets(int(w.size), w.lanes, i+1)}
	w.levels[i].CompareAndSwap(nil, lv) // a loser loads the winner's level
	return w.levels[i].Load()
}

// bucketFor returns the bucket for a timer due at tick d, when the wheel's
// clock is at tick c0, and the tick at which to look at that bucket.
func (w *TimingWheel) bucketFor(d, c0 int64) (*bucket, int64) {
	if d <= c0 {
		return &w.due, d
	}
	lv := w.level(0)
	if d-c0 < w.size {
		return &lv.buckets[d&w.mask], d
	}
	for i := 1; ; i++ {
		lv = w.level(i)
		n, c := d>>lv.shift, c0>>lv.shift
		if n-c >= w.size {
			if i != w.numLevels-1 {
				continue
			}
			// Beyond the top level's span: the slot, within one rotation
			// and at least two slots ahead, that the deadline maps to.
			n = c + 2 + (n-c-2)&w.mask
		}
		// Here n >= c+2, since d did not fit level i-1, so the cascade
		// tick, n-1, is still ahead of c0.
		return &lv.buckets[n&w.mask], (n - 1) << lv.shift
	}
}

// placeFor returns the bucket for a timer due at when (ns since start), on
// the driver's clock, and the instant at which the driver must look at it:
// for a coarse bucket the start of its cascade, for a level-0 one the end
// of the grain the deadline falls in (see grainsPerTick). due puts the
// timer in the due bucket, which the driver looks at on its next pass.
func (w *TimingWheel) placeFor(when int64, due bool) (*bucket, int64) {
	if due {
		return &w.due, when
	}
	b, exp := w.bucketFor(w.tickOf(when), w.cur.Load())
	if !b.coarse {
		return b, w.grainOf(when)
	}
	if exp >= (noExpiration-1)/w.tick {
		return b, noExpiration - 1 // beyond any reachable instant, yet armed
	}
	return b, exp * w.tick
}

// tickOf returns when (ns since start) rounded up to a tick.
func (w *TimingWheel) tickOf(when int64) int64 {
	d := when / w.tick
	if when%w.tick > 0 {
		d++
	}
	return d
}

// grainsPerTick is how many times at most the driver looks at a level-0
// bucket during its tick: a timer fires at the end of the grain (a quarter
// of a tick) its deadline falls in. More grains cost more wake-ups of the
// driver while timers come due; fewer make timers later.
const grainsPerTick = 4

// grainOf returns when (ns since start) rounded up to a grain.
func (w *TimingWheel) grainOf(when int64) int64 {
	g := max(1, w.tick/grainsPerTick)
	if r := when % g; r > 0 && when <= noExpiration-1-g {
		return when - r + g
	}
	return when
}

// cascadeSlice is how many timers the driver moves per look at a coarse
// bucket whose range is still far ahead. Such a bucket comes due one of
// its own ticks before its range starts, and moving a large one at once
// would keep the driver from the timers due meanwhile: while more than
// half of that lead is left, the driver moves a slice per look and looks
// again at the next grain, then moves the rest. The timers not moved yet
// wait in the bucket, pending: none is due before its range starts.
const cascadeSlice = 1024

// cascadeBudget returns how many timers the driver may move out of b, a
// bucket it expires at now (ns since start): see cascadeSlice.
func (w *TimingWheel) cascadeBudget(b *bucket, now int64) int {
	if !b.coarse {
		return math.MaxInt
	}
	code, slot, _ := splitLaneID(b.lanes[0].id)
	lv := w.levels[code-1].Load()
	nowTick := now / w.tick
	next := nowTick>>lv.shift + 1 // the level's next range
	start, half := next<<lv.shift, int64(1)<<lv.shift/2
	if next&w.mask != int64(slot) || nowTick >= start-half {
		return math.MaxInt // b is not the next range's bucket, or half the lead is spent
	}
	return cascadeSlice
}
