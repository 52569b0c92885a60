package timingwheel

import (
	"bytes"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"
)

// Handing fired timers' tasks to the executor, and how the wheel's Stop
// meets it.
//
// The driver holds w.handing from Start until it exits, except while it
// is inside a call of a custom executor. Stop, having set the stopped
// flag, waits for the driver to exit (waitForDriver), unless the driver is
// inside an executor call that may be waiting for the very task calling
// Stop:
//
//   - Stop is called on the driver goroutine: a task run inline;
//   - a task of this wheel handed over earlier is running meanwhile, on
//     another goroutine: the executor may be a bounded pool whose workers
//     are all busy, one of them with the caller.
//
// Then Stop returns at once: when the call returns, the driver takes the
// lock back, sees the flag, keeps the tasks it has not handed over
// (keepFired) and exits. Either way no task is handed over after Stop
// returns but the one being handed over.

// spawn starts a goroutine that runs t's task, as time.AfterFunc does.
// The goroutine runs a pooled runner's function: "go w.runFired(t)" would
// allocate a closure for its arguments at each firing: at 200,000
// firings a second, 5 MB a second of garbage made on the driver, whose
// fresh pages fault on first write (a few µs each on a virtual machine,
// at times a millisecond) and delay every timer after it.
func (w *TimingWheel) spawn(t *Timer) {
	r := w.runner(t)
	run := r.run
	go run()
}

// execute hands f to the custom executor, wrapped so that its panic is
// recovered wherever the executor runs it; a panic of the executor itself
// is reported like a task's. The wrappers are pooled: firing allocates
// nothing, which keeps the driver clear of garbage-collector assists.
func (w *TimingWheel) execute(t *Timer) {
	defer w.recoverPanic()
	w.handOver(w.runner(t))
}

// runner returns a pooled runner carrying t's task.
func (w *TimingWheel) runner(t *Timer) *runner {
	r, _ := w.runners.Get().(*runner)
	if r == nil {
		r = &runner{w: w}
		if w.exec == nil {
			r.run = r.runSpawned
		} else {
			r.run = r.runOnce
		}
	}
	r.t = t
	return r
}

// A runner carries the task of one fired timer to the goroutine that runs
// it (see spawn) or to a custom executor (see execute).
type runner struct {
	w   *TimingWheel
	t   *Timer
	run func() // r.runSpawned or r.runOnce, made once per runner
	// running is set while the task runs, for waitForDriver.
	running atomic.Bool
}

// runSpawned runs the task in the goroutine spawn started. The runner goes
// back to the pool first: the task may take long.
func (r *runner) runSpawned() {
	w, t := r.w, r.t
	r.t = nil
	w.runners.Put(r)
	w.runFired(t)
}

func (r *runner) runOnce() {
	w, t := r.w, r.t
	r.t = nil
	r.running.Store(true)
	w.tasksRunning.Add(1)
	w.runFired(t)
	w.tasksRunning.Add(-1)
	r.running.Store(false)
	w.runners.Put(r)
}

// handOver calls the custom executor with r's task, letting the wheel's
// Stop look meanwhile.
func (w *TimingWheel) handOver(r *runner) {
	w.handingRunner = r
	w.handing.Unlock()
	defer func() {
		w.handing.Lock()
		w.handingRunner = nil
		select {
		case w.leftExec <- struct{}{}:
		default:
		}
	}()
	w.exec(r.run)
}

// waitForDriver returns once the driver has exited, or is inside a call
// of the executor that may be waiting for the caller; see above. The
// wheel must be stopped.
func (w *TimingWheel) waitForDriver() {
	var stuck <-chan time.Time // armed at the first wait for an executor call
	for {
		w.handing.Lock()
		select {
		case <-w.exited:
			w.handing.Unlock()
			return
		default:
		}
		// The driver is inside an executor call. Count the tasks running
		// beside it, not the one it is handing over, which may be running
		// inline.
		others := w.tasksRunning.Load()
		if r := w.handingRunner; r != nil && r.running.Load() {
			others--
		}
		w.handing.Unlock()
		if others > 0 || goroutineID() == w.driverID {
			return
		}
		if stuck == nil {
			t := time.NewTimer(w.stuckStopAfter)
			defer t.Stop()
			stuck = t.C
		}
		select {
		case <-w.exited:
			return
		case <-w.leftExec:
		case <-stuck:
			// Fires once: the wait goes on, but not in silence.
			w.log().Error("timingwheel: Stop has waited for the executor to take a task of this wheel; "+
				"if every worker of the executor runs a task that waits for this Stop (a pool shared with "+
				"wheels whose tasks stop this one), it waits for ever: give each wheel a pool of its own, "+
				"or call Stop from outside the tasks", "waited", w.stuckStopAfter)
		}
	}
}

// goroutineID returns the ID of the calling goroutine, read from the
// header of its stack trace ("goroutine 42 [running]:"). It costs about a
// microsecond: the wheel's Stop and Start call it, never a hot path.
func goroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseUint(string(b), 10, 64)
	return id
}

// runFired runs the task of t, a fired timer, unless a Stop or Reset
// took the timer back since it fired (or, for a periodic timer, its run
// claims it; see periodic.run).
func (w *TimingWheel) runFired(t *Timer) {
	defer w.taskDone()
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
