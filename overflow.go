package timingwheel

// The hierarchy of wheels. Level 0 has size buckets of one tick each; level
// i has size buckets of size^i ticks each, so it spans size^(i+1) ticks.
// Overflow levels are created the first time a timer needs them. When the
// clock reaches a bucket of level i > 0, the driver flushes it: its timers
// cascade down to finer levels, and those already due fire. The top level
// keeps timers that are further away than its span: a timer there is put
// in the slot its deadline maps to and simply placed again each time that
// slot comes round, so its round count is implicit in its deadline.
//
// Placement never needs a lock on the wheel: a timer may be placed from a
// slightly stale clock, into any bucket due no later than its deadline,
// because the driver re-examines every timer of a bucket it flushes and
// fires only those whose deadline has passed.

// maxLevels bounds the hierarchy; with the default configuration four
// levels already cover math.MaxInt64 nanoseconds.
const maxLevels = 8

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
	lv := &level{shift: uint(i) * w.sizeShift, buckets: newBuckets(int(w.size), w.lanes)}
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
	for i := 0; ; i++ {
		lv := w.level(i)
		n, c := d>>lv.shift, c0>>lv.shift
		if n-c < w.size {
			// Level 0 fires at the end of the timer's tick; higher levels
			// cascade at the start of their bucket's range. Either way the
			// bucket's slot differs from the current one (n > c).
			return &lv.buckets[n&w.mask], n << lv.shift
		}
		if i == w.numLevels-1 {
			// Beyond the top level's span: the next slot, within one
			// rotation, that the deadline maps to.
			n = c + 1 + (n-c-1)&w.mask
			return &lv.buckets[n&w.mask], n << lv.shift
		}
	}
}

// insertOwned links t, which the caller owns (a new timer, or one whose
// status it set to mutating), and makes it pending with state st. A new
// timer is created pending, so store is false for it. A timer already due
// (its deadline is not after the caller's now) goes to the due bucket,
// which the driver flushes on its next pass.
func (w *TimingWheel) insertOwned(t *Timer, st uint64, store, due bool) {
	var b *bucket
	var exp int64
	if c0 := w.cur.Load(); due {
		b, exp = &w.due, c0
	} else {
		b, exp = w.bucketFor(w.tickOf(t.when), c0)
	}
	l := b.laneFor(t)
	l.mu.Lock()
	l.pushBack(t)
	if store {
		t.store(st)
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
	l.pushBack(t)
	if !t.cas(s, withStatus(s, statusPending)) {
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

// flush empties bucket b, which is due at tick nowTick (now in ns): due
// timers fire, the others cascade to the bucket their deadline now maps
// to. Tasks run after the whole bucket is settled, so a task (even one
// run inline on this goroutine) never meets a timer in the moving state.
func (w *TimingWheel) flush(b *bucket, now, nowTick int64) {
	for i := range b.lanes {
		l := &b.lanes[i]
		// Take at most the timers present now; ones added meanwhile
		// re-arm the bucket and are flushed on the next pass.
		l.mu.Lock()
		left := l.n
		l.mu.Unlock()
		for left > 0 {
			batch := w.batch[:0]
			l.mu.Lock()
			t := l.head
			for t != nil && len(batch) < flushBatch && left > 0 {
				next := t.next
				// A timer that is not pending has an owner (a Stop or
				// Reset waiting for this lock) who unlinks it: skip it.
				if s := t.load(); status(s) == statusPending && t.cas(s, withStatus(s, statusMoving)) {
					l.remove(t)
					left--
					batch = append(batch, moved{t, withStatus(s, statusMoving)})
				}
				t = next
			}
			if t == nil {
				left = 0 // walked the whole lane
			}
			l.mu.Unlock()
			w.batch = batch
			w.inFlight.Add(int64(len(batch)))
			w.settle(batch, b, now, nowTick)
		}
	}
	for _, m := range w.deferred {
		nb, exp := w.bucketFor(w.tickOf(m.t.when), nowTick)
		w.insertMoved(m.t, m.s, nb, exp)
	}
	clear(w.deferred)
	w.deferred = w.deferred[:0]
	clear(w.batch[:cap(w.batch)])
	w.inFlight.Store(0)
	w.runTasks()
}

// settle fires or cascades each timer of a batch taken out of b.
func (w *TimingWheel) settle(batch []moved, b *bucket, now, nowTick int64) {
	for _, m := range batch {
		t := m.t
		if t.when <= now {
			w.fire(t, m.s)
			continue
		}
		nb, exp := w.bucketFor(w.tickOf(t.when), nowTick)
		if nb == b {
			// Back into the bucket being drained: wait until it is empty.
			w.deferred = append(w.deferred, m)
			continue
		}
		w.insertMoved(t, m.s, nb, exp)
	}
}

// fire runs t's action unless a Stop cancelled t first, in which case it
// releases t as idle.
func (w *TimingWheel) fire(t *Timer, s uint64) {
	switch kind(s) {
	case kindChan:
		if t.cas(s, withStatus(s, statusFiring)) {
			t.f() // a non-blocking send of w.firedAt
		}
		t.store(withStatus(s, statusIdle))
	case kindPeriodic:
		if t.cas(s, withStatus(s, statusRunning)) {
			w.tasks = append(w.tasks, t.f)
			return
		}
		t.store(withStatus(s, statusIdle))
	default:
		if t.cas(s, withStatus(s, statusIdle)) {
			w.tasks = append(w.tasks, t.f)
			return
		}
		t.store(withStatus(s, statusIdle))
	}
}
