package timingwheel

// Handing fired timers' tasks to the executor, and how the wheel's Stop
// meets it.
//
// The driver holds w.handing from Start until it exits, except while it
// is inside a call of a custom executor. Stop, having set the stopped
// flag, takes the lock: it gets it once the driver has exited, or at once
// if the driver is inside the executor, which may be blocked on the very
// task calling Stop (an inline executor, or a bounded pool whose workers
// are all busy). In the second case Stop returns without waiting: when the
// call returns, the driver takes the lock back, sees the flag, keeps the
// tasks it has not handed over (keepFired) and exits. Either way no task
// is handed over after Stop returns but the one being handed over.

// handOver calls the custom executor with run, letting the wheel's Stop
// go by meanwhile.
func (w *TimingWheel) handOver(run func()) {
	w.handing.Unlock()
	defer w.handing.Lock()
	w.exec(run)
}

// waitForDriver returns once the driver has exited or is inside a call of
// the executor; see above. The wheel must be stopped.
func (w *TimingWheel) waitForDriver() {
	w.handing.Lock()
	//lint:ignore SA2001 the lock is taken only to wait for the driver
	w.handing.Unlock()
}

// runFired runs the task of t, a fired timer, unless a Stop or Reset
// took the timer back since it fired (or, for a periodic timer, its run
// claims it; see periodic.run).
func (w *TimingWheel) runFired(t *Timer) {
	if kind(t.load()) == kindPeriodic {
		w.runTask(t.f) // a panic of its Scheduler is reported too
		return
	}
	s := t.load()
	if status(s) == statusRunning && t.cas(s, withStatus(s, statusIdle)) {
		w.runTask(t.f)
	}
}

// keepFired makes t, a fired timer whose task the stopped wheel will not
// hand over, pending in no lane, like the timers the wheel's Stop kept in
// their buckets: Len counts it and Stop of it returns true. A Stop or
// Reset that took it back first has already settled it.
func (w *TimingWheel) keepFired(t *Timer) {
	w.outside.Add(1)
	if s := t.load(); status(s) != statusRunning || !t.cas(s, withStatus(s, statusPending)) {
		w.outside.Add(-1)
	}
}
