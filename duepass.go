package timingwheel

// The due bucket holds timers whose deadline had passed when they were
// armed. The driver flushes it at most once per pass of its loop: a timer
// armed due again while the pass is under way (a task run inline that
// resets its own timer to 0, or a Scheduler that does not move forward)
// waits for the next pass, after the driver has taken Sync and Stop
// requests and flushed every other bucket due. So such a timer runs once
// per pass and cannot hold the driver in one pass for ever.

// dueTurn reports whether the driver may flush b now. For the due bucket,
// whose expiration the caller has just reset, it is false if the bucket
// was already flushed in this pass; the bucket is then armed again by
// endPass.
func (w *TimingWheel) dueTurn(b *bucket) bool {
	if b != &w.due {
		return true
	}
	if w.dueFlushed {
		w.dueDeferred = true
		return false
	}
	w.dueFlushed = true
	return true
}

// endPass ends a pass of the driver's loop, arming the due bucket again
// if timers armed in it during the pass wait for the next one.
func (w *TimingWheel) endPass() {
	w.dueFlushed = false
	if w.dueDeferred {
		w.dueDeferred = false
		w.due.arm(w.cur.Load()*w.tick, w.queue) // now: bucket instants are in ns
	}
}

// takeRequest takes a Sync request or a wake-up that is waiting, without
// blocking: the driver calls it when it goes round its loop at once, so
// that Sync is served even while timers come due on every pass.
func (w *TimingWheel) takeRequest() {
	select {
	case r := <-w.syncReqs:
		w.waiters = append(w.waiters, r)
	case <-w.queue.wake:
	default:
	}
}
