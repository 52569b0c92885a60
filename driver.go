package timingwheel

import (
	"runtime"
	"time"
	"unsafe"
)

// The driver is one goroutine per started wheel. Each pass of its loop
// reads the clock and expires every bucket due by then, earliest first
// (see expire), so every timer due fires in the pass however far the
// clock jumped. It then releases the Sync calls the pass served and
// sleeps (sleep.go) until the earliest bucket is due or it is woken.

// flushBatch is how many timers the driver looks at per hold of a lane's
// lock; it hands their tasks over between holds.
const flushBatch = 256

// spareLinger is how long the driver must have nothing to do before it
// lets its spare arrays go (see spares).
const spareLinger = time.Second

func (w *TimingWheel) drive() {
	defer w.handing.Unlock() // after close(w.exited): see Stop
	defer close(w.exited)
	sl := newSleeper(w.clock, w.now, w.realClock, time.Duration(w.grainOf(1)))
	defer sl.close()
	if sl.tfd != nil {
		w.fd.Store(sl.tfd)
		defer w.fd.Store(nil) // before sl.close
	}
	for {
		w.takeSyncRequests()
		now := w.now()
		w.passing.Store(true)
		ok := w.pass(now)
		w.passing.Store(false)
		if !ok {
			return
		}
		next, armed := w.queue.peek()
		if !armed || next-now > int64(spareLinger) {
			w.spares.drop()
		}
		w.releaseWaiters(now)

		if armed {
			wait := time.Duration(next - w.now())
			if wait <= 0 {
				continue // came due during the pass
			}
			sl.set(next, wait)
		} else {
			sl.stop()
		}
		// A wake changes what it wakes for before it wakes, and setting
		// the sleeper may have replaced the wake: look again. (A mock
		// clock may have stepped past next meanwhile.)
		if w.stopped.Load() || w.takeSyncRequests() || armed && w.now() >= next {
			continue
		}
		if n, ok := w.queue.peek(); ok && (!armed || n < next) {
			continue
		}
		sl.wait(w.wakes)
	}
}

// wake wakes the driver for a new earliest bucket, a Sync, or Stop: it
// wakes the timerfd, or, without one, signals wakes.
func (w *TimingWheel) wake() {
	if tfd := w.fd.Load(); tfd != nil {
		tfd.wake()
		return
	}
	select {
	case w.wakes <- struct{}{}:
	default:
	}
}

// wakeForNewMin wakes the driver for a new earliest bucket, unless the
// driver is in its pass, which arms buckets itself and looks at the delay
// queue's minimum afterwards anyway. An adder that reads passing as true
// pushed its bucket before the driver cleared the flag, so before that
// look.
func (w *TimingWheel) wakeForNewMin() {
	if !w.passing.Load() {
		w.wake()
	}
}

// pass expires every bucket due at now (ns since start), earliest first,
// and reports false if the wheel stopped. The due bucket is expired once
// per pass: a timer armed due again meanwhile (an inline task resetting
// its own timer to 0) waits for the next, so it cannot hold the driver.
func (w *TimingWheel) pass(now int64) bool {
	if now/w.tick > w.cur.Load() {
		w.cur.Store(now / w.tick) // only the driver writes it; it never goes back
	}
	w.firedAt = w.timeAt(now)
	dueExpired, dueAgain := false, false
	for !w.stopped.Load() {
		e, ok := w.queue.popDue(now)
		if !ok {
			if dueAgain {
				w.due.arm(now, w.queue)
			}
			return true
		}
		if !e.b.exp.CompareAndSwap(e.exp, noExpiration) {
			continue // stale: the bucket was expired or armed earlier since
		}
		if e.b == &w.due {
			if dueExpired {
				dueAgain = true
				continue
			}
			dueExpired = true
		}
		w.expire(e.b, now)
	}
	return false
}

// expire looks at the timers of b, which is due at now (read again
// before each batch, so what came due meanwhile fires too). A level-0 or
// the due bucket fires the timers due and keeps the others, armed for the
// grain of the earliest. A coarse bucket cascades each timer to the finer
// bucket its deadline maps to now, or fires it if due; while its range is
// still far ahead, only a slice of them (see cascadeSlice).
//
// Each lane is looked at under its lock, in batches of flushBatch, from
// its end: taking a timer out moves the last one, looked at already, into
// its place. Between batches the lock is let go and the tasks are handed
// over. A Stop meanwhile may give a timer a second, harmless look; timers
// added meanwhile go to the end, for a later look their adders armed.
func (w *TimingWheel) expire(b *bucket, now int64) {
	budget := w.cascadeBudget(b, now)
	left := int64(noExpiration) // the earliest deadline left in b
	for i := range b.lanes {
		if w.stopped.Load() {
			return
		}
		l := &b.lanes[i]
		now = max(now, w.now()) // fire what came due since, too
		l.mu.Lock()
		j := len(l.items) - 1
		for {
			for seen := 0; j >= 0 && seen < flushBatch && budget > 0; j, seen = j-1, seen+1 {
				t := l.items[j]
				switch {
				case t.when <= now:
					l.removeAt(j)
					w.fire(b, l, t, now)
				case !b.coarse:
					left = min(left, t.when)
				default:
					l.removeAt(j)
					w.cascade(b, l, t)
					budget--
				}
			}
			if j < 0 || budget == 0 || w.stopped.Load() {
				break
			}
			l.mu.Unlock()
			w.handOverTasks()
			if w.stopped.Load() {
				// The wheel's Stop may have returned during a custom
				// executor's call: fire nothing more.
				return
			}
			now = max(now, w.now())
			l.mu.Lock()
			j = min(j, len(l.items)-1)
		}
		w.spares.keep(l.shrink())
		l.mu.Unlock()
		w.handOverTasks()
		if budget == 0 {
			b.arm(w.grainOf(now+1), w.queue) // the rest, at the next look
			break
		}
	}
	if left != noExpiration {
		// A timer left here may be stopped meanwhile: b then comes due for
		// nothing, which costs a look and fires nothing early.
		b.arm(w.grainOf(left), w.queue)
	}
}

// fire fires t, which the driver took out of l (a lane of b, whose lock
// it holds) at now. A channel timer sends before it is idle, so a Stop
// that sees it idle finds the value to drain; a Ticker sends and stays
// pending for its next tick (see fireTicker); any other's task is the
// driver's to hand over.
func (w *TimingWheel) fire(b *bucket, l *lane, t *Timer, now int64) {
	s := t.load()
	if kind(s) == kindTicker {
		w.fireTicker(b, l, t, now)
		return
	}
	l.pending--
	if kind(s) == kindChan {
		t.f() // a send of w.firedAt that never blocks
		t.move(s, withStatus(s, statusIdle), byOwner)
		return
	}
	t.move(s, withStatus(s, statusFired), byOwner)
	w.warm(t.f)
	w.tasks = append(w.tasks, t)
}

// warm reads the code pointer of f, a task about to be handed over, so
// that its closure is in the cache when it runs: the driver's loop
// overlaps these misses, where each task would wait for its own. warmed
// keeps the read from being optimized away.
func (w *TimingWheel) warm(f func()) {
	w.warmed += **(**uintptr)(unsafe.Pointer(&f))
}

// cascade links t, taken out of l (a lane of from, locked), into the
// finer bucket its deadline maps to now. The pending counts stay as they
// were (see lane.pending).
func (w *TimingWheel) cascade(from *bucket, l *lane, t *Timer) {
	b, exp := w.placeFor(t.when, false)
	dst := l // a timer beyond the top level's span may map to its own bucket
	if b != from {
		dst = b.laneFor(t)
		dst.mu.Lock()
	}
	w.spares.push(dst, t)
	s := t.load()
	t.move(s, pendingIn(s, dst.id), byOwner)
	if dst != l {
		dst.mu.Unlock()
	}
	b.arm(exp, w.queue)
}

// handOverTasks hands the tasks of the timers fired to the executor, or,
// once the wheel is stopped, keeps them.
func (w *TimingWheel) handOverTasks() {
	for i, t := range w.tasks {
		w.tasks[i] = nil
		if w.stopped.Load() {
			w.keepFired(t)
		} else {
			w.handOver(t)
		}
	}
	if w.exec == nil && len(w.tasks) > 1 {
		runtime.Gosched() // let the goroutines just started run, and give their runners back
	}
	w.tasks = w.tasks[:0]
}

type syncRequest struct {
	upTo int64
	done chan struct{}
}

// releaseWaiters completes the Sync calls whose moment the pass at now
// served.
func (w *TimingWheel) releaseWaiters(now int64) {
	kept := w.waiters[:0]
	for _, r := range w.waiters {
		if r.upTo <= now {
			close(r.done)
		} else {
			kept = append(kept, r)
		}
	}
	clear(w.waiters[len(kept):])
	w.waiters = kept
}

// takeSyncRequests takes the Sync calls made since it last did, and
// reports whether there were any.
func (w *TimingWheel) takeSyncRequests() bool {
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	took := len(w.syncReqs) > 0
	w.waiters = append(w.waiters, w.syncReqs...)
	clear(w.syncReqs)
	w.syncReqs = w.syncReqs[:0]
	return took
}
