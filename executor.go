package timingwheel

import (
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// Handing fired timers' tasks over, and waiting for them.
//
// The driver holds w.handing from Start until it exits, except inside a call
// of a custom executor (see handOver). The wheel's Stop sets the stopped
// flag, then takes the lock once: it returns when the driver has exited or,
// if the driver is in such a call, at once. When the call returns, the
// driver sees the flag, keeps the tasks it has not handed over and exits.

// handOver hands t's task over from the driver, letting w.handing go while
// it calls a custom executor. The task counts as under way before that, so
// that a Shutdown whose Stop returned meanwhile waits for it.
func (w *TimingWheel) handOver(t *Timer) {
	w.underway.n.Add(1)
	if w.exec != nil {
		w.handing.Unlock()
		defer w.handing.Lock()
	}
	w.execute(t)
}

// execute hands t's task, counted as under way, to the executor: by
// default, to a new goroutine.
func (w *TimingWheel) execute(t *Timer) {
	r, _ := w.runners.Get().(*runner)
	if r == nil {
		r = &runner{w: w}
		r.run = r.runOnce
	}
	r.t = t
	if w.exec == nil {
		go r.run()
		return
	}
	defer w.recoverPanic() // of the executor itself
	w.exec(r.run)
}

// A runner carries one fired timer's task to the goroutine or executor that
// runs it. Runners are pooled and make their run func once, so handing a
// task over allocates nothing (go w.runFired(t) would allocate a closure).
type runner struct {
	w   *TimingWheel
	t   *Timer
	run func() // r.runOnce
}

// runOnce puts the runner back before running the task, which may take long.
func (r *runner) runOnce() {
	w, t := r.w, r.t
	r.t = nil
	w.runners.Put(r)
	w.runFired(t)
}

// runFired runs the task of t, a fired timer, unless a Stop or Reset took it
// back: the CAS out of fired decides. A periodic timer's run makes its own
// claim (see periodic.run); runTask reports a panic of its Scheduler too.
func (w *TimingWheel) runFired(t *Timer) {
	defer w.taskDone()
	s := t.load()
	if kind(s) == kindPeriodic || status(s) == statusFired && t.move(s, withStatus(s, statusIdle), byCAS) {
		w.runTask(t.f)
	}
}

// keepFired makes t, a fired timer whose task the stopped wheel will not
// hand over, pending again in the due bucket, which no driver looks at any
// more: Len counts it and a Stop of it returns true, as for the timers
// Stop kept in their buckets. A Stop or Reset that took it first wins.
func (w *TimingWheel) keepFired(t *Timer) {
	l := w.due.laneFor(t)
	l.mu.Lock()
	if s := t.load(); status(s) == statusFired && t.move(s, pendingIn(s, l.id), byCAS) {
		l.push(t, nil)
		l.pending++
	}
	l.mu.Unlock()
}

// handBeforeStart hands the task of t, a new timer of kind k already due,
// to the executor at once (see AfterFunc), fired as the driver fires one,
// so that a Stop of t before the task starts still prevents it; false,
// doing nothing, if the wheel has started or stopped meanwhile. The wheel's
// life lock orders it with Start and Stop: a Stop that returns first keeps
// the task from the executor, and one that returns after it finds it
// counted as under way (see Shutdown). A default executor's goroutine is
// started under the lock; a custom executor is called after it, as the
// driver calls one, so that a Stop never waits for such a call.
func (w *TimingWheel) handBeforeStart(t *Timer, k uint64) bool {
	w.life.Lock()
	if w.started.Load() || w.stopped.Load() {
		w.life.Unlock()
		return false
	}
	t.move(k, k|statusFired, byCreator)
	w.underway.n.Add(1)
	if w.exec == nil {
		w.execute(t)
		w.life.Unlock()
		return true
	}
	w.life.Unlock()
	w.execute(t)
	return true
}

// runTask runs f, reporting a panic to the panic handler.
func (w *TimingWheel) runTask(f func()) {
	defer w.recoverPanic()
	f()
}

func (w *TimingWheel) recoverPanic() {
	r := recover()
	if r == nil {
		return
	}
	if w.onPanic != nil {
		w.onPanic(r)
		return
	}
	log := w.logger
	if log == nil {
		log = slog.Default()
	}
	log.Error("timingwheel: task panicked", "panic", r, "stack", string(debug.Stack()))
}

// underway counts the tasks handed over and not returned, for Shutdown. Once
// the wheel is stopped no task is handed over (bar one counted just before),
// so the count only falls, and the first to see zero closes idle.
type underway struct {
	n        atomic.Int64
	doneOnce sync.Once
	done     chan struct{} // closed once the wheel is stopped and no task is under way
}

// taskDone counts a task that returned.
func (w *TimingWheel) taskDone() {
	if w.underway.n.Add(-1) == 0 && w.stopped.Load() {
		w.underway.closeDone()
	}
}

func (c *underway) closeDone() { c.doneOnce.Do(func() { close(c.done) }) }
