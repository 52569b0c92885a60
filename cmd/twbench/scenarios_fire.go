package main

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/seed64e23a5c/timingwheel"
)

// init registers the fire scenario.
func init() {
	register(scenario{
		name: "fire",
		// First: the runtime timers another scenario stopped stay in the
		// Ps' timer heaps for a while, and the scheduler's work on them
		// delays the goroutines this scenario measures.
		order:  1,
		help:   "-fire-n timers due across -window: wall time, expiries/s, lateness p50-max, early firings, CPU",
		timers: func(o *options) int { return o.fireN },
		run:    runFire,
	})
}

// Labels of the engines that fire measures; they name the plot's lines.
const (
	labelInline    = "wheel, inline executor"
	labelGoroutine = "wheel, goroutine executor"
	labelRuntime   = "runtime"
)

// fireResult is one engine's measurement of the fire scenario.
type fireResult struct {
	// wall runs from the window's start to the last firing; ideally it is
	// the window itself.
	wall time.Duration
	// cpu is the process CPU time from the first AfterFunc to the last
	// firing.
	cpu time.Duration
	// late holds every timer's lateness, sorted.
	late []time.Duration
	// early counts the timers that fired before their due time.
	early int
}

// fireState is what the fire callbacks share.
type fireState struct {
	late  []time.Duration
	fired atomic.Int64
	n     int64
	end   time.Time // written by the last callback, before done closes
	done  chan struct{}
}

// fireEngine is one of the engines that fire measures.
type fireEngine int

const (
	engineInline fireEngine = iota
	engineGoroutine
	engineRuntime
	numFireEngines
)

// fireOrder returns the order in which round r (from 0) measures the
// engines: each round starts one engine further on, so over every three
// rounds each engine goes first, second and last once. An engine measured
// after another finds the process warmed by it (goroutines, stacks, heap
// pages already touched), and a fixed order gave that to the runtime.
func fireOrder(r int) [numFireEngines]fireEngine {
	var order [numFireEngines]fireEngine
	for k := range order {
		order[k] = fireEngine((r + k) % int(numFireEngines))
	}
	return order
}

// runFire measures the wheel with the inline executor, the wheel with the
// default goroutine-per-task executor, and the runtime, each firing
// -fire-n timers due across -window, in -rounds rounds (see fireOrder).
// Each figure is the median of an engine's rounds: on a shared machine a
// stall of a few milliseconds (the host, a page fault on fresh memory)
// lands in one engine's run or another's at random, and decides a single
// run's p999 and max. Early firings are summed over the rounds; the plot
// shows every round's samples, which are kept only when there is a plot.
func runFire(e *env) ([]row, error) {
	if e.opts.rates {
		return runRates(e)
	}
	n := e.opts.fireN
	offsets := make([]time.Duration, n)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range offsets {
		offsets[i] = time.Duration(r.Int64N(int64(e.opts.window)))
	}

	var (
		figures [numFireEngines][]fireFigures
		samples [numFireEngines][]fireResult // kept for the plot only
	)
	for round := range e.opts.rounds {
		for _, eng := range fireOrder(round) {
			var res fireResult
			var err error
			switch eng {
			case engineInline:
				res, err = fireWheel(e, labelInline, executorInline, offsets)
			case engineGoroutine:
				res, err = fireWheel(e, labelGoroutine, executorGoroutine, offsets)
			case engineRuntime:
				res, err = fireOnce(e, labelRuntime, offsets, func(d time.Duration, f func()) { time.AfterFunc(d, f) })
			}
			if err != nil {
				return nil, err
			}
			figures[eng] = append(figures[eng], res.figures())
			if e.opts.plotPath != "" {
				samples[eng] = append(samples[eng], res)
			}
			release()
		}
	}
	if e.opts.plotPath != "" {
		e.addLateness(labelInline, pooledLateness(samples[engineInline]))
		e.addLateness(labelGoroutine, pooledLateness(samples[engineGoroutine]))
		e.addLateness(labelRuntime, pooledLateness(samples[engineRuntime]))
	}

	in, gr, rt := figures[engineInline], figures[engineGoroutine], figures[engineRuntime]
	var rows []row
	pair := func(figure, unit string, f func(fireFigures) float64) {
		rows = append(rows,
			both(figure+" (inline)", unit, medianOver(in, f), medianOver(rt, f)),
			both(figure+" (goroutine)", unit, medianOver(gr, f), medianOver(rt, f)))
	}
	win := "window " + e.opts.window.String()
	pair("all fired after, "+win, unitSeconds, func(f fireFigures) float64 { return seconds(f.wall) })
	pair("expiries", unitPerSec, func(f fireFigures) float64 { return f.expiries })
	pair("lateness p50", unitMicros, func(f fireFigures) float64 { return micros(f.p50) })
	pair("lateness p99", unitMicros, func(f fireFigures) float64 { return micros(f.p99) })
	pair("lateness p999", unitMicros, func(f fireFigures) float64 { return micros(f.p999) })
	pair("lateness max", unitMicros, func(f fireFigures) float64 { return micros(f.max) })
	early := func(fs []fireFigures) float64 {
		sum := 0
		for _, f := range fs {
			sum += f.early
		}
		return float64(sum)
	}
	rows = append(rows,
		both("early firings (inline)", unitCount, early(in), early(rt)),
		both("early firings (goroutine)", unitCount, early(gr), early(rt)))
	pair("CPU", unitSeconds, func(f fireFigures) float64 { return seconds(f.cpu) })
	return rows, nil
}

// fireFigures are what the table shows of one engine's round; unlike a
// fireResult they do not hold a sample per timer.
type fireFigures struct {
	wall, cpu           time.Duration
	expiries            float64 // per second
	p50, p99, p999, max time.Duration
	early               int
}

// figures summarizes r, whose samples are sorted.
func (r fireResult) figures() fireFigures {
	return fireFigures{
		wall:     r.wall,
		cpu:      r.cpu,
		expiries: float64(len(r.late)) / r.wall.Seconds(),
		p50:      percentile(r.late, 0.50),
		p99:      percentile(r.late, 0.99),
		p999:     percentile(r.late, 0.999),
		max:      r.late[len(r.late)-1],
		early:    r.early,
	}
}

// pooledLateness returns the lateness samples of every round, sorted.
func pooledLateness(rs []fireResult) []time.Duration {
	if len(rs) == 1 {
		return rs[0].late
	}
	var all []time.Duration
	for _, r := range rs {
		all = append(all, r.late...)
	}
	slices.Sort(all)
	return all
}

// fireWheel runs fireOnce on a wheel configured by the flags but with
// the given executor, whatever -executor says, and the extra options.
func fireWheel(e *env, label, executor string, offsets []time.Duration, extra ...timingwheel.Option) (fireResult, error) {
	o := *e.opts
	o.executor = executor
	w, err := timingwheel.New(append(o.wheelOptions(), extra...)...)
	if err != nil {
		return fireResult{}, err
	}
	w.Start()
	defer w.Stop()
	return fireOnce(e, label, offsets, func(d time.Duration, f func()) { w.AfterFunc(d, f) })
}

// fireOnce schedules one timer per offset, due at the window's start plus
// the offset, and waits until all have fired. The window starts a lead
// time after the first AfterFunc, long enough for every timer to be
// scheduled before the first is due; each callback records its lateness
// with time.Since(due).
func fireOnce(e *env, label string, offsets []time.Duration, schedule func(d time.Duration, f func())) (fireResult, error) {
	n := len(offsets)
	st := &fireState{late: make([]time.Duration, n), n: int64(n), done: make(chan struct{})}
	// Touch every page of late now: the first write to a page the OS has
	// not backed yet faults, which on a VM can take a millisecond, and the
	// callbacks would pay it inside the window, as lateness of the engine.
	for i := range st.late {
		st.late[i] = -1
	}
	lead := 100*time.Millisecond + time.Duration(n)*e.opts.leadPerTimer
	runtime.GC()

	cpu0 := cpuTime()
	t0 := time.Now()
	base := t0.Add(lead)
	e.each("fire: scheduling "+label, n, func(i int) {
		due := base.Add(offsets[i])
		schedule(time.Until(due), func() {
			st.late[i] = time.Since(due)
			if st.fired.Add(1) == st.n {
				st.end = time.Now()
				close(st.done)
			}
		})
	})
	if took := time.Since(t0); took > lead {
		fmt.Fprintf(e.stderr, "twbench: fire %s: scheduling took %v, longer than the %v lead: the first timers were scheduled after their due time\n",
			label, took.Round(time.Millisecond), lead)
	}

	if err := waitFired(e, label, st, base.Add(e.opts.window)); err != nil {
		return fireResult{}, err
	}
	res := fireResult{wall: st.end.Sub(base), cpu: cpuTime() - cpu0, late: st.late}
	slices.Sort(res.late)
	for _, l := range res.late {
		if l >= 0 {
			break
		}
		res.early++
	}
	return res, nil
}

// waitFired waits until every timer of st has fired, with a progress bar
// of the count fired. It gives up a minute after the window ends.
func waitFired(e *env, label string, st *fireState, windowEnd time.Time) error {
	giveUp := time.NewTimer(time.Until(windowEnd) + time.Minute)
	defer giveUp.Stop()
	b := e.progress.start("fire: waiting for "+label, int(st.n))
	defer b.finish()
	var tick <-chan time.Time
	if b.pb != nil {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-st.done:
			return nil
		case <-tick:
			b.set(int(st.fired.Load()))
		case <-giveUp.C:
			return fmt.Errorf("%s: only %d of %d timers fired within a minute of the window's end", label, st.fired.Load(), st.n)
		}
	}
}
