package timingwheel

// The hierarchy of wheels. Level 0 has size buckets of one tick each. Each
// overflow level i > 0 has size buckets of (size/2)^i ticks each, so a
// bucket of level i spans half of level i-1: the levels overlap twice.
// Overflow levels are created the first time a timer needs them.
//
// The overlap lets the driver cascade a coarse bucket one of its own ticks
// before its first timer is due: by then every timer in it already fits
// the finer level. The cascade is done in batches, and between batches the
// driver fires the level-0 buckets that came due, so moving a large
// bucket never holds up timers that are due now.
//
// The top level keeps timers that are further away than its span: a timer
// there is put in the slot its deadline maps to and placed again each time
// that slot comes round, so its round count is implicit in its deadline.
//
// Placement never needs a lock on the wheel: a timer may be placed from a
// slightly stale clock, into any bucket due no later than its deadline,
// because the driver re-examines every timer of a bucket it flushes and
// fires only those whose deadline has passed.

// maxLevels bounds the hierarchy. Levels, level 0 included, are created
// only when a timer first needs them, so the bound costs nothing: with the
// default configuration (1ms tick, 512 buckets) six levels cover
// math.MaxInt64 nanoseconds, and only the smallest wheels need more than
// a handful. Beyond it the top level wraps round.
const maxLevels = 64

// flushBatch is how many timers the driver takes out of a lane per lock.
const flushBatch = 256

// A level is one wheel of the hierarchy.
type level struct {
	shift   uint // log2 of the level's tick, in level-0 ticks
	buckets []bucket
}

// level returns level i, creating it if needed.
func (w *TimingWheel) level(i int) *level {
	if lv := w.levels[i].Load(); lv != nil {
		return lv
	}
	lv := &level{shift: uint(i) * (w.sizeShift - 1), buckets: newBuckets(int(w.size), w.lanes, i+1)}
	if w.levels[i].CompareAndSwap(nil, lv) {
		return lv
	}
	return w.levels[i].Load()
}

// bucketFor returns the bucket for a timer due at tick d, when the wheel's
// clock is at tick c0, and the tick at which that bucket must be flushed.
func (w *TimingWheel) bucketFor(d, c0 int64) (*bucket, int64) {
	if d <= c0 {
		return &w.due, d
	}
	lv := w.level(0)
	if d-c0 < w.size {
		// Level 0: the tick's bucket, due at the timer's grain (see
		// placeFor).
		return &lv.buckets[d&w.mask], d
	}
	for i := 1; ; i++ {
		lv = w.level(i)
		n, c := d>>lv.shift, c0>>lv.shift
		// Here n >= c+2, since d did not fit level i-1. The bucket
		// cascades one of its ticks before its range starts, so its
		// expiration, (n-1)<<shift, is still ahead of c0.
		if n-c < w.size {
			return &lv.buckets[n&w.mask], (n - 1) << lv.shift
		}
		if i == w.numLevels-1 {
			// Beyond the top level's span: the slot, within one
			// rotation and at least two slots ahead, that the deadline
			// maps to.
			n = c + 2 + (n-c-2)&w.mask
			return &lv.buckets[n&w.mask], (n - 1) << lv.shift
		}
	}
}

// placeFor returns the bucket for a timer due at when (ns since start),
// when the wheel's clock is at tick c0, and the instant (ns since start)
// at which the driver must look at that bucket: for a coarse bucket the
// start of its cascade, and for a level-0 or the due bucket the end of the
// grain the deadline falls in, so that each timer there fires at the end
// of its grain rather than at the end of its tick (see flush).
func (w *TimingWheel) placeFor(when, c0 int64) (*bucket, int64) {
	b, exp := w.bucketFor(w.tickOf(when), c0)
	if !b.coarse {
		return b, w.grainOf(when)
	}
	if exp >= (noExpiration-1)/w.tick {
		return b, noExpiration - 1 // beyond any reachable instant, yet armed
	}
	return b, exp * w.tick
}

// insertOwned links t, which the caller owns (a new timer, or one whose
// status it set to mutating), and makes it pending in the lane it picks:
// its state becomes st with that lane. A new timer is not shared yet, so
// store is false for it and its state is written without an atomic. A
// timer already due (its deadline is not after the caller's now) goes to
// the due bucket, which the driver flushes on its next pass.
func (w *TimingWheel) insertOwned(t *Timer, st uint64, store, due bool) {
	var b *bucket
	var exp int64
	if c0 := w.cur.Load(); due {
		b, exp = &w.due, t.when
	} else {
		b, exp = w.placeFor(t.when, c0)
	}
	l := b.lockLaneFor(t)
	l.push(t)
	l.pending++
	if st = pendingIn(st, l.id); store {
		t.store(st)
	} else {
		t.state = st // a new timer, not shared yet
	}
	l.mu.Unlock()
	b.arm(exp, w.queue)
}

// insertMoved links t, which the driver took out of a bucket with state s
// (status moving), into b. If a Stop cancelled the timer meanwhile, it is
// unlinked again and released as idle.
func (w *TimingWheel) insertMoved(t *Timer, s uint64, b *bucket, exp int64) {
	l := b.laneFor(t)
	l.mu.Lock()
	w.pushMoved(l, t)
	if !t.cas(s, pendingIn(s, l.id)) {
		l.remove(t)
		l.mu.Unlock()
		t.store(withStatus(s, statusIdle))
		return
	}
	l.mu.Unlock()
	b.arm(exp, w.queue)
}

// moved is a timer the driver took out of a bucket, with the state it set.
type moved struct {
	t *Timer
	s uint64
}

// flush looks at the timers of bucket b, which is due. In a coarse
// bucket every timer cascades to a finer level (or fires, if due by now).
// In a level-0 or the due bucket, the timers due by now fire and the
// others stay where they are, pending, and b is armed again for the grain
// of the earliest of their deadlines: each fires at the end of its grain,
// not at the end of its tick, and never before its deadline.
//
// The driver takes the timers out in batches of flushBatch under the
// lane's lock, settles each batch with no lock held, and runs its tasks
// before it takes the next; so a task, even one run inline on this
// goroutine, never meets a timer in the moving state. Between the batches
// of a coarse bucket it fires the level-0 buckets due meanwhile, and it
// moves a large coarse bucket whose range is still far ahead in slices,
// a look each (see cascade.go).
func (w *TimingWheel) flush(b *bucket) {
	left := int64(noExpiration) // the earliest deadline left in b
	budget := w.cascadeBudget(b, w.now())
	sliced := false // a slice of a cascade ended with timers left
	for i := range b.lanes {
		if budget <= 0 {
			sliced = true
			break
		}
		l := &b.lanes[i]
		// Look only at the timers in the lane now: timers added
		// meanwhile, or put back into b by this flush, go after them,
		// re-arm b and wait for its next turn.
		l.mu.Lock()
		l.limit = int32(len(l.items))
		l.flushing = true
		j := int(l.limit) - 1 // the timers to look at are at j and below
		l.mu.Unlock()
		for more := true; more; {
			batch := w.batch[:0]
			now := w.now()
			l.mu.Lock()
			// A Stop between batches moves the timer at limit-1 into the
			// hole it makes and lowers limit: the timers yet to look at
			// stay below both j and limit.
			j = min(j, int(l.limit)-1)
			for seen := 0; j >= 0 && seen < flushBatch; j, seen = j-1, seen+1 {
				t := l.items[j]
				if !b.coarse && t.when > now {
					// Not due yet: it stays at j, above the timers still
					// to look at (a removal below may bring it back among
					// them, which only means a second look).
					left = min(left, t.when)
					continue
				}
				// Every timer in the lane is pending in it, and stays so
				// while the lock is held (see state.go); the swap checks
				// it all the same.
				if s := t.load(); status(s) == statusPending && laneOf(s) == l.id && t.cas(s, withStatus(s, statusMoving)) {
					l.remove(t) // fills index j from above it: seen already
					batch = append(batch, moved{t, withStatus(s, statusMoving)})
				}
			}
			budget -= len(batch)
			sliced = j >= 0 && budget <= 0
			more = j >= 0 && !sliced
			if !more {
				l.limit = 0
				l.flushing = false
				w.keepSpare(l.shrink())
			}
			l.mu.Unlock()
			w.batch = batch
			w.firedAt = w.timeAt(now) // what channel timers send
			w.settle(batch, now, w.advanceClock(now))
			clear(batch)
			w.runTasks()
			if b.coarse {
				w.fireDue(w.now(), true)
			}
		}
	}
	if sliced {
		// Look again at the next grain for the timers left (see
		// cascade.go).
		b.arm(w.grainOf(w.now()+1), w.queue)
	}
	if left != noExpiration {
		// A timer left here may have been stopped since: b then comes
		// due for nothing, which costs a look and fires nothing early.
		b.arm(w.grainOf(left), w.queue)
	}
}

// grainsPerTick is how many times at most the driver looks at a level-0
// bucket during its tick: it fires the bucket's timers at the end of the
// grain (a quarter of a tick) their deadline falls in. Each look costs a
// wake-up of the driver (on Linux a timerfd set and read: tens of µs of
// CPU on our 2-core VM) and a walk of the timers left in the bucket, so
// while timers come due all the time the driver's CPU grows with the
// grains per tick; at the end of each deadline's own grain, the median
// timer fires about half a grain late.
const grainsPerTick = 4

// grainOf returns when (ns since start) rounded up to a grain.
func (w *TimingWheel) grainOf(when int64) int64 {
	g := max(1, w.tick/grainsPerTick)
	if r := when % g; r > 0 && when <= noExpiration-1-g {
		return when - r + g
	}
	return when
}

// The driver keeps spare lane arrays of minLaneCap to maxSpareCap slots,
// maxSpareSlots in all (128 KiB).
const (
	maxSpareCap   = 1024
	maxSpareSlots = 16384
)

// dropSpares lets the spare arrays go.
func (w *TimingWheel) dropSpares() {
	if len(w.spares) > 0 {
		clear(w.spares)
		w.spares, w.spareSlots = w.spares[:0], 0
	}
}

// keepSpare keeps a, the array of a lane the driver emptied (its slots
// are all nil), for reuse if it is of a size worth keeping and there is
// room.
func (w *TimingWheel) keepSpare(a []*Timer) {
	if c := cap(a); c >= minLaneCap && c <= maxSpareCap && w.spareSlots+c <= maxSpareSlots {
		w.spares = append(w.spares, a[:0])
		w.spareSlots += c
	}
}

// pushMoved adds t to l as push does, growing l into a spare array if it
// is full and one fits. l.mu must be held.
func (w *TimingWheel) pushMoved(l *lane, t *Timer) {
	i := w.spareFor(l)
	if i < 0 {
		l.push(t)
		return
	}
	a := w.spares[i]
	l.pushInto(t, a)
	w.spareSlots -= cap(a)
	last := len(w.spares) - 1
	w.spares[i] = w.spares[last]
	w.spares[last] = nil
	w.spares = w.spares[:last]
}

// spareFor returns the index of the spare array l should grow into, or -1
// if l has room or no spare fits: the smallest with more room than l has
// timers and at most four times as much, so a small lane never takes a
// large array. l.mu must be held.
func (w *TimingWheel) spareFor(l *lane) int {
	n := len(l.items)
	if n < cap(l.items) {
		return -1
	}
	best := -1
	for i, a := range w.spares {
		if c := cap(a); c > n && c <= 4*n && (best < 0 || c < cap(w.spares[best])) {
			best = i
		}
	}
	return best
}

// settle fires or moves each timer of a batch. The timers it fires stop
// counting as pending in one step, before their tasks are handed over.
func (w *TimingWheel) settle(batch []moved, now, nowTick int64) {
	w.settling.Lock() // see Len
	defer w.settling.Unlock()
	fired := 0
	for _, m := range batch {
		t := m.t
		if t.when <= now {
			if w.fire(t, m.s) {
				fired++
			}
			continue
		}
		nb, exp := w.placeFor(t.when, nowTick)
		w.insertMoved(t, m.s, nb, exp)
	}
	w.outside.Add(-int64(fired))
}

// fire runs t's action unless a Stop cancelled t first, in which case it
// releases t as idle; it reports whether t fired.
func (w *TimingWheel) fire(t *Timer, s uint64) bool {
	switch kind(s) {
	case kindChan:
		if t.cas(s, withStatus(s, statusFiring)) {
			t.f() // a non-blocking send of w.firedAt
			t.store(withStatus(s, statusIdle))
			return true
		}
	default:
		// Its task starts only if it is still running then (see
		// runFired): until then a Stop or Reset still prevents it.
		if t.cas(s, withStatus(s, statusRunning)) {
			w.tasks = append(w.tasks, t)
			return true
		}
	}
	t.store(withStatus(s, statusIdle))
	return false
}
