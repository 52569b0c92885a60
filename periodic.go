package timingwheel

import (
	"sync"
	"time"
)

// Scheduler decides when a periodic timer runs. Next returns the time of
// the run after prev; the zero time ends the schedule. ScheduleFunc calls
// Next first with the current time, then with each run's scheduled time.
// prev is in UTC, as github.com/RussellLuo/timingwheel passes it, so a
// calendar schedule computes the same hours whatever the local time zone.
// The wheel measures the time from prev to the time Next returns, so a
// change of the wall clock does not move the schedule.
type Scheduler interface {
	Next(prev time.Time) time.Time
}

// Every returns a Scheduler that runs every d, keeping its cadence: each
// run is scheduled d after the previous run's scheduled time, not after
// the moment it ran, so the schedule does not drift. Runs missed while the
// process, the driver or the task itself was late are skipped, as
// time.Ticker drops ticks (see ScheduleFunc). It panics if d <= 0.
func Every(d time.Duration) Scheduler {
	if d <= 0 {
		panic("timingwheel: Every called with non-positive duration")
	}
	return every(d)
}

type every time.Duration

func (e every) Next(prev time.Time) time.Time { return prev.Add(time.Duration(e)) }

// ScheduleFunc calls f at each time s.Next returns, until Next returns the
// zero time or the timer is stopped. A run starts only after the previous
// one has returned.
//
// The run after a run is the first time of the schedule after the moment
// that run started: times missed while the process, the driver or the
// executor was stalled are skipped, as time.Ticker drops ticks, so a stall
// causes one late run and the schedule then resumes on its cadence. If a
// run lasts past the next time, the next run starts as soon as it returns,
// and the one after that is again the first time after that late run
// started: two runs never start at the same moment to catch up.
//
// A Scheduler whose Next does not move forward before reaching that
// moment (it returns prev or an earlier time) runs the task at the next
// tick after the run started: such a schedule runs at most once per tick
// and never holds up the wheel. If the schedule ends among the skipped
// times, it ends.
//
// If the first Next returns the zero time, ScheduleFunc returns nil, as
// github.com/RussellLuo/timingwheel does; Stop and Reset on a nil Timer
// return false. It panics if s or f is nil.
func (w *TimingWheel) ScheduleFunc(s Scheduler, f func()) *Timer {
	if s == nil {
		panic("timingwheel: ScheduleFunc called with nil Scheduler")
	}
	if f == nil {
		panic("timingwheel: ScheduleFunc called with nil func")
	}
	now := w.now()
	when, ok := w.nextAfter(s, now)
	if !ok {
		return nil
	}
	t := &Timer{w: w}
	p := &periodic{t: t, s: s, f: f}
	t.f = p.run
	w.schedule(t, when, when <= now, kindPeriodic)
	return t
}

// nextAfter asks s for the time after ns (ns since start), passed in UTC,
// and returns ns plus the span Next added, so that the wall clock does not
// move it (see Scheduler); false if the schedule ends.
func (w *TimingWheel) nextAfter(s Scheduler, ns int64) (int64, bool) {
	base := w.timeAt(ns).UTC()
	n := s.Next(base)
	if n.IsZero() {
		return 0, false
	}
	return max(0, addSaturating(ns, int64(n.Sub(base)))), true
}

type periodic struct {
	t *Timer
	s Scheduler
	f func()
	// mu is held for a whole run, so runs never overlap, even when a
	// Reset during a run makes the next one due before it returns.
	mu sync.Mutex
}

// run is the task of a periodic timer: it claims the run, calls f, and
// arms the next run unless the timer was stopped or reset meanwhile. The
// claim and the re-arm are made under the timer's lock, so that neither
// mixes with a Reset; f and Next are called outside it, so that Stop and
// Reset never wait on them, and they may call them. Only this run moves
// the timer to running (the next waits for p.mu), so a timer still
// running at the end was neither stopped nor reset during the run.
func (p *periodic) run() {
	t, w := p.t, p.t.w
	p.mu.Lock()
	defer p.mu.Unlock()
	mu := t.mutex()
	mu.Lock()
	s := t.load()
	if status(s) != statusFired || !t.move(s, withStatus(s, statusRunning), byCAS) {
		mu.Unlock()
		return // stopped or reset after it fired: this run does not start
	}
	prev := t.when
	mu.Unlock()

	started := w.now()
	w.runTask(p.f)
	when, ok := p.next(prev, started)

	mu.Lock()
	defer mu.Unlock()
	s = withStatus(s, statusRunning)
	if !ok {
		t.move(s, withStatus(s, statusIdle), byCAS) // the schedule ends, unless a Stop or Reset came first
		return
	}
	if owned := withStatus(s, statusIdle) | locked; t.move(s, owned, byCAS) {
		t.when = when
		w.insert(t, owned, false)
	}
}

// maxSkips bounds the times next skips, for a Scheduler other than Every,
// which skips in one step.
const maxSkips = 1 << 20

// next returns the first time of the schedule after prev that is after
// started (ns since start), skipping the times missed before it; false if
// the schedule ends first. If Next stops moving forward (or maxSkips
// times go by) before passing started, it returns the next tick after
// started, so that such a schedule runs at most once per tick.
func (p *periodic) next(prev, started int64) (int64, bool) {
	w := p.t.w
	n, ok := w.nextAfter(p.s, prev)
	if !ok || n > started {
		return n, ok
	}
	if e, isEvery := p.s.(every); isEvery {
		return cadence(n, int64(e), started), true
	}
	for range maxSkips {
		nn, ok := w.nextAfter(p.s, n)
		switch {
		case !ok:
			return 0, false
		case nn <= n:
			return w.nextTick(started), true // Next does not move forward
		case nn > started:
			return nn, true
		}
		n = nn
	}
	return w.nextTick(started), true
}

// cadence returns the first of n, n+d, n+2d... (ns since start) after
// started, skipping in one step the times missed before it: the rule of
// Every and of a Ticker, which keep their cadence and drop what they missed.
func cadence(n, d, started int64) int64 {
	if n > started {
		return n
	}
	return addSaturating(n, ((started-n)/d+1)*d)
}

// nextTick returns the start of the tick after the one ns falls in.
func (w *TimingWheel) nextTick(ns int64) int64 {
	return addSaturating((ns/w.tick)*w.tick, w.tick)
}
