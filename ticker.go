package timingwheel

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// A Ticker is a channel timer that the driver links again after each send.
//
// Its core is a timer of kindTicker, made as a channel timer's core is
// (see chanFor): its task sends on C without blocking, through a weak
// pointer, and a cleanup stops it once C is unreachable. When the driver
// fires it, under its lane's lock, it sends and, still holding that lock,
// links the core for its next tick as it cascades a timer (fireTicker):
// the core goes from pending to pending and is never fired or running, so
// a Stop or Reset that takes the lane's lock afterwards finds it in its
// new lane, and one that took it first unlinked it and the driver never
// saw it. Stop and Reset are the channel timer's: stop the core, or rearm
// it, and drain C once it is owned, so that no stale tick is received
// after they return.
//
// The lock order adds the Ticker's own lock (Reset) before the timer's
// lock. The driver holds two lanes when it links a ticker again, as when
// it cascades, but the second may belong to a coarser level: only the
// driver ever holds two lanes, so their order cannot deadlock.

// kindTicker is the kind of a Ticker's core, the fourth value of the kind
// bits (see timer.go).
const kindTicker uint64 = 3 << 3

const _ = uint64(0) - kindTicker&^kindMask // fits the kind bits: this fails to compile otherwise

// Ticker holds a channel that delivers the ticks of a TimingWheel's clock
// at intervals, as time.Ticker does. Create one with NewTicker. A Ticker
// must not be copied once used (go vet reports a copy).
type Ticker struct {
	C <-chan time.Time // The channel on which the ticks are delivered.

	core *tickerCore // nil for a Ticker not made by NewTicker
	// mu makes each Reset change the period and the next tick together.
	mu sync.Mutex
}

// tickerCore is the timer the wheel links for a Ticker: a channel timer's
// core (see chantimer.go) with the period the driver links it again by.
type tickerCore struct {
	Timer
	period atomic.Int64 // ns; set by NewTicker and Reset, read by the driver
}

// NewTicker returns a new Ticker whose channel C receives the time on the
// wheel's clock at each tick, every d, as time.NewTicker's does since Go
// 1.23:
//
//   - Each tick is scheduled d after the previous tick's scheduled time,
//     not after the moment it was sent, so the ticks do not drift. Like
//     every timer of the wheel, a tick is sent at the end of the grain its
//     time falls in (a quarter of the tick, 250µs by default; see
//     WithTick), never early.
//   - C holds one tick. The driver sends without blocking: a tick that
//     finds C full is dropped, and so are the ticks missed while the
//     driver or the process was late, so that a slow reader gets the next
//     tick on the cadence rather than a burst.
//   - No stale tick is received after Stop or Reset returns.
//   - A Ticker the program no longer references (neither the Ticker nor
//     C) is garbage-collected and stops, even without Stop.
//
// The driver sends the ticks itself: a Ticker costs no goroutine, and a
// tick allocates nothing. A running Ticker counts in Len. Like a channel
// timer, a Ticker made before Start ticks once the wheel runs, and one on
// a stopped wheel never ticks.
//
// Unlike time.Ticker's, C has a capacity of one: cap(C) and len(C) report
// it, where the runtime reports time's channels as unbuffered. It panics
// if d <= 0, as time.NewTicker does.
func (w *TimingWheel) NewTicker(d time.Duration) *Ticker {
	if d <= 0 {
		panic("timingwheel: non-positive interval for NewTicker")
	}
	core := &tickerCore{Timer: Timer{w: w}}
	core.period.Store(int64(d))
	tk := &Ticker{C: w.chanFor(&core.Timer), core: core}
	// Not w.schedule: like a channel timer, a Ticker waits for the driver
	// even on a wheel not started yet, rather than going to the executor.
	core.when, _ = w.deadline(d)
	w.insert(&core.Timer, kindTicker, false)
	return tk
}

// Stop turns the ticker off: once it returns, no tick is sent and none is
// left in C. It does not close C. Stop on a stopped Ticker, or on a Ticker
// not made by NewTicker, does nothing.
func (tk *Ticker) Stop() {
	if tk.core == nil {
		return // as time.Ticker's Stop, for old programs that make a Ticker{C: c}
	}
	stopChan(&tk.core.Timer, tk.C)
	runtime.KeepAlive(tk) // C stays reachable: no cleanup stops the core meanwhile
}

// Reset stops the ticker, drops any tick left in C, and sets its period to
// d: the next tick comes d after the call, and the ticks go on every d
// from there. A stopped Ticker starts again. It panics if d <= 0, or on a
// Ticker not made by NewTicker, as time.Ticker's Reset does.
func (tk *Ticker) Reset(d time.Duration) {
	if d <= 0 {
		panic("timingwheel: non-positive interval for Ticker.Reset")
	}
	if tk.core == nil {
		panic("timingwheel: Reset called on uninitialized Ticker")
	}
	tk.mu.Lock()
	defer tk.mu.Unlock()
	core := tk.core
	core.period.Store(int64(d)) // a tick the driver sends meanwhile is drained below
	when, _ := core.w.deadline(d)
	core.rearm(when, false, tk.C)
	runtime.KeepAlive(tk) // C stays reachable: no cleanup stops the core meanwhile
}

// fireTicker sends a tick on the channel of t, the core of a Ticker that
// the driver took out of l (a lane of b, whose lock it holds) at now, and
// links t again for its next tick: a period after the tick it sent for,
// skipping the ticks missed by now (see cadence). t stays pending, as a
// timer the driver cascades does, and its lane counts stay as they are.
func (w *TimingWheel) fireTicker(b *bucket, l *lane, t *Timer, now int64) {
	t.f() // a send of w.firedAt that never blocks
	d := (*tickerCore)(unsafe.Pointer(t)).period.Load()
	t.when = cadence(addSaturating(t.when, d), d, now)
	w.cascade(b, l, t)
}
