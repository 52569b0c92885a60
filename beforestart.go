package timingwheel

// runBeforeStart hands the task of t, a new AfterFunc or ScheduleFunc
// timer already due on a wheel not started yet, to the executor from the
// calling goroutine, as github.com/RussellLuo/timingwheel runs a timer
// that is due when added. Its driver does not exist yet to do it. The
// timer is fired as the driver fires one, so that Stop before the task
// starts still prevents it. This path is rare and may allocate.
func (w *TimingWheel) runBeforeStart(t *Timer, k uint64) {
	t.state = k | statusRunning // t is not shared yet
	w.handingOver()
	if w.exec == nil {
		go w.runFired(t)
		return
	}
	defer w.recoverPanic()
	w.exec(func() { w.runFired(t) })
}
