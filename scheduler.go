package timingwheel

import (
	"sync"
	"sync/atomic"
	"time"
)

// Scheduler decides when a periodic timer runs. Next returns the time of
// the run after prev; the zero time ends the schedule. ScheduleFunc calls
// Next first with the current time, then with each run's scheduled time.
type Scheduler interface {
	Next(prev time.Time) time.Time
}

// Every returns a Scheduler that runs every d, keeping its cadence: each
// run is scheduled d after the previous run's scheduled time, not after
// the moment it ran, so the schedule does not drift. It panics if d <= 0.
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
// one has returned. Runs missed while the process or the driver was
// stalled are skipped, as time.Ticker drops ticks: at most one late run
// happens, then the schedule resumes on its cadence. It panics if s or f
// is nil.
func (w *TimingWheel) ScheduleFunc(s Scheduler, f func()) *Timer {
	if s == nil {
		panic("timingwheel: ScheduleFunc called with nil Scheduler")
	}
	if f == nil {
		panic("timingwheel: ScheduleFunc called with nil func")
	}
	p := &periodic{s: s, f: f}
	t := &Timer{w: w}
	p.t = t
	t.f = p.run
	first := s.Next(w.clock.Now())
	if first.IsZero() {
		t.state = kindPeriodic // status idle
		return t
	}
	now := w.now()
	when := w.nsAt(first)
	w.schedule(t, when, when <= now, kindPeriodic)
	return t
}

// nsAt converts a time on the wheel's clock to ns since start, clamped to
// [0, MaxInt64].
func (w *TimingWheel) nsAt(t time.Time) int64 {
	return max(0, int64(t.Sub(w.start)))
}

type periodic struct {
	t *Timer
	s Scheduler
	f func()
	// mu is held for a whole run, so runs never overlap, even when a
	// Reset during a run schedules the next one before it returns.
	mu sync.Mutex
}

// run is the task of a periodic timer: it claims the run, calls f, and
// schedules the next run unless the timer was stopped or reset meanwhile.
// It asks the Scheduler for the next time while the timer is still
// executing, so Stop and Reset never wait on the Scheduler, which may even
// call them itself.
func (p *periodic) run() {
	t, w := p.t, p.t.w
	p.mu.Lock()
	defer p.mu.Unlock()
	s := t.load()
	if status(s) != statusRunning {
		return // stopped or reset after it fired: this run does not start
	}
	// Read the deadline before the claim: if a Reset changes it
	// meanwhile, the claim fails. (Resets store it atomically for this.)
	prev := atomic.LoadInt64(&t.when)
	if !t.cas(s, withStatus(s, statusExecuting)) {
		return
	}
	w.runTask(p.f)
	now := w.now()
	next := p.next(w.timeAt(prev), w.timeAt(now))
	s = withStatus(s, statusExecuting)
	owned := nextGeneration(s, statusMutating)
	if !t.cas(s, owned) {
		return // stopped or reset during the run
	}
	if next.IsZero() || w.stopped.Load() {
		t.store(withStatus(owned, statusIdle))
		return
	}
	when := w.nsAt(next)
	atomic.StoreInt64(&t.when, when)
	w.insertOwned(t, withStatus(owned, statusPending), true, when <= now)
}

// maxSkips bounds the runs next skips after a stall, for a Scheduler other
// than Every, which skips in one step.
const maxSkips = 1 << 20

// next returns the run after prev, skipping runs missed before now: if
// several are due, only the latest of them is kept.
func (p *periodic) next(prev, now time.Time) time.Time {
	n := p.s.Next(prev)
	if n.IsZero() || n.After(now) {
		return n
	}
	if e, ok := p.s.(every); ok {
		missed := now.Sub(n) / time.Duration(e)
		return n.Add(missed * time.Duration(e))
	}
	for range maxSkips {
		nn := p.s.Next(n)
		if nn.IsZero() || nn.After(now) || !nn.After(n) {
			break
		}
		n = nn
	}
	return n
}
