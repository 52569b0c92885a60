package timingwheel

import (
	"context"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// Handing fired timers' tasks over, and waiting for them.
//
// By default each task runs in a goroutine of its own, as time.AfterFunc
// runs it; WithExecutor sets a function the driver calls with each task
// instead. A task starts only if it wins the CAS out of fired (see
// runFired): until then a Stop or Reset still prevents it.
//
// The driver holds w.handing from Start until it exits, except while it
// is inside a call of a custom executor. The wheel's Stop, having set the
// stopped flag, takes the lock once: so it returns when the driver has
// exited, or at once if the driver is inside such a call, which may be
// waiting for the very task that called Stop. When the call returns, the
// driver sees the flag, keeps the tasks it has not handed over and exits.
// Shutdown is the call that waits for the tasks.

// handOver hands t's task to the executor from the driver, which lets
// w.handing go while it is inside a call of a custom executor.
func (w *TimingWheel) handOver(t *Timer) {
	if w.exec != nil {
		w.handing.Unlock()
		defer w.handing.Lock()
	}
	w.execute(t)
}

// execute hands t's task to the executor: to a goroutine of its own by
// default.
func (w *TimingWheel) execute(t *Timer) {
	w.underway.n.Add(1)
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

// A runner carries the task of one fired timer to the goroutine or the
// executor that runs it. Runners are pooled, and each makes its run
// function once, so that handing a task over allocates nothing (where "go
// w.runFired(t)" would allocate a closure).
type runner struct {
	w   *TimingWheel
	t   *Timer
	run func() // r.runOnce, made once per runner
}

// runOnce runs the task; the runner goes back to the pool first, as the
// task may take long.
func (r *runner) runOnce() {
	w, t := r.w, r.t
	r.t = nil
	w.runners.Put(r)
	w.runFired(t)
}

// runFired runs the task of t, a fired timer, unless a Stop or Reset took
// t back since it fired: the CAS out of fired decides. A periodic timer's
// run makes its own claim (see periodic.run).
func (w *TimingWheel) runFired(t *Timer) {
	defer w.taskDone()
	s := t.load()
	if kind(s) == kindPeriodic {
		w.runTask(t.f) // a panic of its Scheduler is reported too
		return
	}
	if status(s) == statusFired && t.cas(s, withStatus(s, statusIdle)) {
		w.runTask(t.f)
	}
}

// runBeforeStart hands the task of t, a new timer already due on a wheel
// not started yet, to the executor at once (see AfterFunc), fired as the
// driver fires one, so that a Stop before the task starts still prevents it.
func (w *TimingWheel) runBeforeStart(t *Timer, k uint64) {
	t.state = k | statusFired // t is not shared yet
	w.execute(t)
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

// underway counts the tasks handed over and not returned, for Shutdown.
// Once the wheel is stopped no task is handed over any more (but the one
// being handed over as Stop is called, counted already), so the count only
// falls, and the first to see it at zero closes idle.
type underway struct {
	n        atomic.Int64
	idleOnce sync.Once
	idle     chan struct{} // closed once the wheel is stopped and no task is under way
}

// taskDone counts a task that returned.
func (w *TimingWheel) taskDone() {
	if w.underway.n.Add(-1) == 0 && w.stopped.Load() {
		w.underway.closeIdle()
	}
}

func (c *underway) closeIdle() { c.idleOnce.Do(func() { close(c.idle) }) }

// Shutdown stops the wheel, as Stop does, then waits until every task
// handed to the executor has returned, or ctx ends, in which case it
// returns ctx's error (the tasks go on). A task handed to an executor that
// never runs it is waited for until ctx ends. Shutdown must not be called
// from a task of the wheel, which would wait for itself: call Stop there.
func (w *TimingWheel) Shutdown(ctx context.Context) error {
	w.Stop()
	if w.underway.n.Load() == 0 {
		w.underway.closeIdle()
	}
	select {
	case <-w.underway.idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
