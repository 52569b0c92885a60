package timingwheel

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The lifecycle matrix: every executor × every kind of timer × every way a
// timer's or the wheel's life can end, each cell asserting what the docs
// promise:
//   - exactly one of "it fired" and "Stop (or Reset) returned true";
//   - nothing sent or started after the wheel's Stop returned, but the task
//     in a custom executor's call at that moment;
//   - Shutdown returns only when every task handed over has returned.

// wait bounds every wait of the matrix: a cell that breaks fails, it does
// not hang.
const wait = 10 * time.Second

// A gate holds tasks, or executor calls, until the test opens it.
type gate struct {
	once    sync.Once
	ch      chan struct{}
	entered chan struct{} // closed when the first goroutine waits at the gate
	seen    sync.Once
}

func newGate() *gate { return &gate{ch: make(chan struct{}), entered: make(chan struct{})} }

func (g *gate) pass() {
	g.seen.Do(func() { close(g.entered) })
	<-g.ch
}

func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }

// lcExecutor makes the wheel's executor for one cell. held says the
// executor's calls wait at the gate (a custom executor that blocks).
type lcExecutor struct {
	name string
	opts func(t *testing.T, g *gate) []Option
	held bool
}

var lcExecutors = []lcExecutor{
	{name: "goroutines", opts: func(*testing.T, *gate) []Option { return nil }},
	{name: "inline", opts: func(*testing.T, *gate) []Option { return []Option{WithExecutor(inline)} }},
	{name: "pool", opts: func(t *testing.T, _ *gate) []Option {
		// Two workers and no queue: the driver blocks while both are busy.
		tasks := make(chan func())
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				for task := range tasks {
					task()
				}
			})
		}
		t.Cleanup(func() { close(tasks); wg.Wait() }) // after the wheel's cleanups: LIFO
		return []Option{WithExecutor(func(task func()) { tasks <- task })}
	}},
	{name: "blocking", held: true, opts: func(_ *testing.T, g *gate) []Option {
		return []Option{WithExecutor(func(task func()) { g.pass(); task() })}
	}},
}

// An lcTimer is one timer of a kind, seen through what the kinds share.
type lcTimer interface {
	stop() bool                 // Stop, true for a Ticker (whose Stop says nothing)
	reset(d time.Duration) bool // Reset, true for a Ticker
	fired() int                 // tasks started, or values received, so far
}

type lcKind struct {
	name     string
	periodic bool // fires again after firing
	channel  bool // sends rather than runs a task
	make     func(w *TimingWheel, d time.Duration, g *gate) lcTimer
}

var lcKinds = []lcKind{
	{name: "ticker", periodic: true, channel: true, make: func(w *TimingWheel, d time.Duration, _ *gate) lcTimer {
		return &tickerOf{t: w.NewTicker(max(d, time.Millisecond))}
	}},
	{name: "func", make: func(w *TimingWheel, d time.Duration, g *gate) lcTimer {
		x := &funcTimer{}
		x.t = w.AfterFunc(d, func() { x.runs.Add(1); g.pass() })
		return x
	}},
	{name: "channel", channel: true, make: func(w *TimingWheel, d time.Duration, _ *gate) lcTimer {
		return &chanTimerOf{t: w.NewTimer(d)}
	}},
	{name: "periodic", periodic: true, make: func(w *TimingWheel, d time.Duration, g *gate) lcTimer {
		x := &funcTimer{}
		var s Scheduler = schedulerFunc(func(prev time.Time) time.Time { return prev }) // due now, then every tick
		if d > 0 {
			s = Every(d)
		}
		x.t = w.ScheduleFunc(s, func() { x.runs.Add(1); g.pass() })
		return x
	}},
}

type funcTimer struct {
	t    *Timer
	runs atomic.Int64
}

func (x *funcTimer) stop() bool                 { return x.t.Stop() }
func (x *funcTimer) reset(d time.Duration) bool { return x.t.Reset(d) }
func (x *funcTimer) fired() int                 { return int(x.runs.Load()) }

// tickerOf is a Ticker seen as an lcTimer: its Stop and Reset return
// nothing, and report true, as for an active schedule.
type tickerOf struct {
	t        *Ticker
	received int
}

func (x *tickerOf) stop() bool                 { x.t.Stop(); return true }
func (x *tickerOf) reset(d time.Duration) bool { x.t.Reset(d); return true }
func (x *tickerOf) fired() int {
	for drain(x.t.C) {
		x.received++
	}
	return x.received
}

type chanTimerOf struct {
	t        *Timer
	received int
}

func (x *chanTimerOf) stop() bool                 { return x.t.Stop() }
func (x *chanTimerOf) reset(d time.Duration) bool { return x.t.Reset(d) }
func (x *chanTimerOf) fired() int {
	for drain(x.t.C) {
		x.received++
	}
	return x.received
}

// lcWheel returns a stopped wheel on a mock clock for the executor, and the
// gate its tasks (and a blocking executor's calls) wait at, open unless
// held.
func lcWheel(t *testing.T, ex lcExecutor, held bool) (*TimingWheel, *clock.Mock, *gate) {
	g := newGate()
	if !held {
		g.open()
	}
	mock := clock.NewMock()
	w, err := New(append([]Option{WithClock(mock)}, ex.opts(t, g)...)...)
	require.NoError(t, err)
	t.Cleanup(func() {
		g.open()
		shutdown(t, w)
	})
	return w, mock, g
}

func shutdown(t *testing.T, w *TimingWheel) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	require.NoError(t, w.Shutdown(ctx), "Shutdown waits for every task handed over")
}

// within runs f in a goroutine and fails the test if it has not returned
// within the bound.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(wait):
		require.FailNow(t, what+" did not return within the bound")
	}
}

func sync1(t *testing.T, w *TimingWheel) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	require.NoError(t, w.Sync(ctx))
}

func TestLifecycleMatrix(t *testing.T) {
	for _, ex := range lcExecutors {
		for _, k := range lcKinds {
			t.Run(ex.name+"/"+k.name+"/Stop", func(t *testing.T) { lcStop(t, ex, k) })
			t.Run(ex.name+"/"+k.name+"/Reset", func(t *testing.T) { lcReset(t, ex, k) })
			t.Run(ex.name+"/"+k.name+"/WheelStopWhileBusy", func(t *testing.T) { lcWheelStop(t, ex, k, false) })
			t.Run(ex.name+"/"+k.name+"/Shutdown", func(t *testing.T) { lcWheelStop(t, ex, k, true) })
			t.Run(ex.name+"/"+k.name+"/BeforeStart", func(t *testing.T) { lcBeforeStart(t, ex, k) })
		}
	}
}

// Stop races the timer's firing: exactly one of them wins, and a periodic
// timer starts no run after Stop returned but one already under way.
func lcStop(t *testing.T, ex lcExecutor, k lcKind) {
	for range 20 {
		w, mock, g := lcWheel(t, ex, ex.held)
		w.Start()
		x := k.make(w, time.Millisecond, g)
		stopped := make(chan bool, 1)
		go func() { stopped <- x.stop() }()
		mock.Add(time.Millisecond)
		var ok bool
		within(t, "Stop", func() { ok = <-stopped })
		atStop := x.fired()
		g.open()
		sync1(t, w)
		mock.Add(10 * time.Millisecond)
		sync1(t, w)
		shutdown(t, w)
		switch {
		case k.periodic:
			assert.True(t, ok, "Stop of an active schedule")
			assert.LessOrEqual(t, x.fired(), atStop+1, "runs after Stop returned")
		default:
			n := x.fired()
			assert.LessOrEqual(t, n, 1)
			assert.Equal(t, 1, n+b2i(ok), "exactly one of fired (%d) and Stop returned true (%v)", n, ok)
		}
	}
}

// Reset races the timer's firing at its old deadline: exactly one of them
// wins, and the timer then fires at its new deadline.
func lcReset(t *testing.T, ex lcExecutor, k lcKind) {
	for range 20 {
		w, mock, g := lcWheel(t, ex, ex.held)
		w.Start()
		x := k.make(w, time.Millisecond, g)
		active := make(chan bool, 1)
		go func() { active <- x.reset(5 * time.Millisecond) }()
		mock.Add(time.Millisecond)
		var ok bool
		within(t, "Reset", func() { ok = <-active })
		g.open()
		sync1(t, w)
		old := x.fired()
		mock.Add(6 * time.Millisecond)
		sync1(t, w)
		shutdown(t, w)
		if k.periodic {
			assert.True(t, ok, "Reset of an active schedule")
			assert.Greater(t, x.fired(), old, "runs after Reset")
			continue
		}
		assert.Equal(t, 1, old+b2i(ok), "exactly one of fired at the old deadline (%d) and Reset returned true (%v)", old, ok)
		assert.Equal(t, 1, x.fired()-old, "fired once at the new deadline")
	}
}

// The wheel's Stop (or Shutdown) while the driver is busy: half the timers
// of the kind, half func timers whose tasks wait at the gate. Once Stop has
// returned, nothing is sent and no task reaches the executor, but the one
// in a custom executor's call; every timer either fired or is stopped by a
// Stop that returns true. Shutdown returns only when every task handed over
// has returned.
func lcWheelStop(t *testing.T, ex lcExecutor, k lcKind, viaShutdown bool) {
	const n = 4000
	w, mock, g := lcWheel(t, ex, true)
	w.Start()
	var began, ended atomic.Int64
	xs := make([]lcTimer, 0, n/2)
	for i := range n {
		if i%2 == 0 {
			xs = append(xs, k.make(w, time.Millisecond, g))
			continue
		}
		w.AfterFunc(time.Millisecond, func() {
			began.Add(1)
			g.pass()
			ended.Add(1)
		})
	}
	mock.Add(time.Millisecond)
	if ex.name != "goroutines" {
		// The driver is held: in the executor, or in a task it runs inline.
		select {
		case <-g.entered:
		case <-time.After(wait):
			require.FailNow(t, "the driver never reached the gate")
		}
	}
	fired := func() (sum int) {
		for _, x := range xs {
			sum += x.fired()
		}
		return sum
	}
	if viaShutdown {
		returned := make(chan [2]int64, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			assert.NoError(t, w.Shutdown(ctx))
			returned <- [2]int64{began.Load(), ended.Load()}
		}()
		g.open()
		var at [2]int64
		within(t, "Shutdown", func() { at = <-returned })
		assert.Equal(t, at[0], at[1], "tasks begun and returned when Shutdown returned")
		return
	}
	within(t, "the wheel's Stop", w.Stop)
	atStop := fired()
	g.open()
	within(t, "the driver's exit", func() { <-w.exited })
	shutdown(t, w)
	if k.channel {
		assert.Equal(t, atStop, fired(), "values sent after the wheel's Stop returned")
	}
	if k.periodic {
		for _, x := range xs {
			assert.LessOrEqual(t, x.fired(), 1)
		}
		return
	}
	// Every timer fired or is kept pending, and exactly one holds.
	for i, x := range xs {
		n := x.fired()
		ok := x.stop()
		if !assert.Equal(t, 1, n+b2i(ok), "timer %d: fired %d times, Stop returned %v", i, n, ok) {
			return
		}
	}
}

// Before Start: a Stop keeps the timer from ever firing, and a task due
// when made, handed to the executor at once, races the wheel's Shutdown:
// if Shutdown returns first the task is never handed over (Stop of it
// returns true); if not, Shutdown waits for it.
func lcBeforeStart(t *testing.T, ex lcExecutor, k lcKind) {
	w, mock, g := lcWheel(t, ex, false)
	x := k.make(w, time.Millisecond, g)
	require.True(t, x.stop())
	w.Start()
	mock.Add(5 * time.Millisecond)
	sync1(t, w)
	assert.Zero(t, x.fired(), "stopped before Start")

	for range 50 {
		w, _, g := lcWheel(t, ex, true)
		var x lcTimer
		start := make(chan struct{})
		made := make(chan struct{})
		go func() { defer close(made); <-start; x = k.make(w, 0, g) }()
		returned := make(chan error, 1)
		go func() {
			<-start
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			returned <- w.Shutdown(ctx)
		}()
		close(start)
		// The gate holds a task handed over, in the executor's call or
		// under way: either Shutdown returns first, and no task is
		// counted under way then, or a task reaches the gate first, and
		// Shutdown waits for it.
		select {
		case err := <-returned:
			require.NoError(t, err)
			assert.Zero(t, w.underway.n.Load(), "a task handed over after Shutdown returned")
			g.open()
		case <-g.entered:
			select {
			case <-returned:
				assert.Fail(t, "Shutdown returned while a task handed over waited")
			default:
			}
			g.open()
			within(t, "Shutdown", func() { require.NoError(t, <-returned) })
		case <-time.After(wait):
			require.FailNow(t, "neither Shutdown returned nor a task began")
		}
		within(t, "making the timer", func() { <-made })
		if k.channel {
			assert.Zero(t, x.fired(), "a channel timer on a wheel stopped before Start")
			continue
		}
		stopped := x.stop()
		if k.periodic {
			assert.True(t, stopped, "a schedule kept pending on the stopped wheel")
			continue
		}
		assert.Equal(t, 1, x.fired()+b2i(stopped), "exactly one of ran (%d) and Stop returned true (%v)", x.fired(), stopped)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
