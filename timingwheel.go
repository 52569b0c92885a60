// Package timingwheel is a hierarchical timing wheel for programs that keep
// millions of timers: one per order, session, request or retry.
//
// A TimingWheel keeps timers in wheels of buckets, as Kafka's purgatory
// does. Level 0 has one bucket per tick; coarser overflow wheels are created
// as needed and cascade their timers down as the clock reaches them. A small
// heap of bucket expirations tells the driver goroutine how long to sleep,
// so an idle wheel costs no CPU. Scheduling and stopping a timer take one
// small lock out of many and allocate only the Timer itself.
//
// Timers never fire early: a task runs no sooner than its deadline and at
// the end of the quarter of a tick its deadline falls in (250µs with the
// default 1ms tick), plus scheduling delay. Deadlines are measured on the
// monotonic clock from the wheel's start, so changes of the wall clock do
// not move them.
//
// On Linux the driver of a wheel on the real clock wakes on a timerfd
// that the runtime's netpoller watches, at the instant asked for, whereas
// an idle program's runtime timers fire up to a millisecond late. No thread
// is held while it waits; each started wheel owns one file descriptor.
//
// The code follows a deadline's path: a new timer is placed (overflow.go)
// in a lane of a bucket (bucket.go), which is armed in the delay queue
// (delayqueue.go); the driver (driver.go) sleeps until a bucket is due
// (sleep.go), then fires its timers or cascades them to finer buckets
// while holding their lane's lock, and hands the tasks over (executor.go).
// timer.go states a timer's statuses, their transitions and the lock
// order, which is all there is to how Stop, Reset and firing race.
package timingwheel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/bits"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
)

// Defaults used by New.
const (
	DefaultTick      = time.Millisecond
	DefaultWheelSize = 512
)

var (
	// ErrInvalidOption is returned by New, wrapped with the reason, when an
	// option has a value the wheel cannot use.
	ErrInvalidOption = errors.New("timingwheel: invalid option")
	// ErrStopped is returned by Sync when the wheel has been stopped.
	ErrStopped = errors.New("timingwheel: wheel stopped")
	// ErrNotStarted is returned by Sync before Start has been called.
	ErrNotStarted = errors.New("timingwheel: wheel not started")
)

// TimingWheel is a hierarchical timing wheel. Create one with New or
// NewTimingWheel and call Start. All methods are safe for concurrent use.
type TimingWheel struct {
	tick      int64 // ns
	size      int64 // buckets per level, a power of two
	mask      int64
	sizeShift uint
	numLevels int
	lanes     int

	clock     clock.Clock
	realClock bool
	start     time.Time
	exec      func(task func())
	onPanic   func(recovered any)
	logger    *slog.Logger

	cur    atomic.Int64 // the driver's clock, in ticks since start
	levels [maxLevels]atomic.Pointer[level]
	due    bucket // timers already due when armed
	queue  *delayQueue

	life    sync.Mutex // orders Start and Stop
	started atomic.Bool
	stopped atomic.Bool
	exited  chan struct{}
	kicks   chan struct{} // see kick
	wake    atomic.Pointer[wakeup]
	// passing is true while the driver is in a pass (see kickForNewMin).
	passing atomic.Bool
	// syncReqs are the Sync calls the driver has not taken yet.
	syncMu   sync.Mutex
	syncReqs []syncRequest
	handing  sync.Mutex // see executor.go
	runners  sync.Pool  // of *runner
	underway underway

	// Owned by the driver goroutine.
	firedAt time.Time // what channel timers send
	tasks   []*Timer  // fired, their tasks not handed over yet
	warmed  uintptr   // see warm
	spares  spares
	waiters []syncRequest
}

// Option configures a TimingWheel.
type Option func(*config)

type config struct {
	tick      time.Duration
	wheelSize int64
	clock     clock.Clock
	clockSet  bool
	exec      func(task func())
	onPanic   func(recovered any)
	logger    *slog.Logger
	lanes     int // lanes per bucket; 0 for the default (tests set it)
	levels    int // a cap on the levels; 0 for none (tests set it)
}

// WithTick sets the duration of one level-0 bucket (default 1ms). A timer
// fires at the end of the quarter of a tick its deadline falls in, so at
// most a quarter of a tick late, plus scheduling delay. A shorter tick
// costs more driver wake-ups while timers come due; a longer one fewer
// levels for far timers.
func WithTick(d time.Duration) Option { return func(c *config) { c.tick = d } }

// WithWheelSize sets the number of buckets per level (default 512, at most
// 65536). It is rounded up to a power of two, and to at least 4, as Netty
// does, so that slot arithmetic is shifts and masks. Each bucket costs
// about 64 bytes per lane (4×GOMAXPROCS lanes, fewer for big wheels).
func WithWheelSize(n int) Option { return func(c *config) { c.wheelSize = int64(n) } }

// WithClock sets the clock the wheel reads, for example a
// clock.NewMock() in tests. The default is clock.New(), the real clock.
// In a test, move a mock clock, then call Sync before asserting: a mock's
// Add runs the timers due up to its target and then sets the time, so
// the driver's alarm, if it was set in between, waits for the next step;
// Sync fires what is due.
func WithClock(c clock.Clock) Option {
	return func(cfg *config) { cfg.clock, cfg.clockSet = c, true }
}

// WithExecutor sets how tasks run. run is called on the driver goroutine
// with each task; it may run it inline (fastest, but a slow task delays
// every later timer), hand it to a worker pool, or start a goroutine. The
// default starts a goroutine per task, as time.AfterFunc does. Tasks
// handed to run already recover their own panics. run may block (a
// bounded pool whose workers are busy): the driver then waits, and later
// timers are late; the wheel's Stop does not wait for it (see Stop).
func WithExecutor(run func(task func())) Option { return func(c *config) { c.exec = run } }

// WithPreciseSleep has no effect; it is kept so that programs using it
// still build.
//
// Deprecated: the driver wakes precisely by default (on a timerfd, on
// Linux); remove the option.
func WithPreciseSleep(on bool) Option { return func(*config) {} }

// WithPanicHandler sets the function that receives the value recovered
// from a panicking task. The default logs it with its stack (see
// WithLogger). Either way the wheel and every other timer go on.
func WithPanicHandler(h func(recovered any)) Option { return func(c *config) { c.onPanic = h } }

// WithLogger sets the logger that reports a panicking task, at level
// Error with the attributes "panic" (the value) and "stack", when no
// WithPanicHandler is set: slog.Default() by default.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// New returns a stopped wheel configured by opts; call Start to run it.
// It returns an error wrapping ErrInvalidOption for a tick <= 0, a wheel
// size < 1 or > 65536, or a nil clock.
//
// A new wheel allocates a few KiB; each level of buckets is allocated
// when the first timer needs it, level 0 included, and is kept until the
// wheel is garbage-collected. A level takes 64 bytes per bucket per lane:
// with the default 512 buckets, 4×GOMAXPROCS lanes (at most 64), that is
// 256 KiB at GOMAXPROCS=2 and 2 MiB at GOMAXPROCS=16.
func New(opts ...Option) (*TimingWheel, error) {
	cfg := config{tick: DefaultTick, wheelSize: DefaultWheelSize}
	for _, o := range opts {
		o(&cfg)
	}
	return newWheel(cfg)
}

// NewTimingWheel returns a stopped wheel with the given tick and wheel
// size; call Start to run it. It panics if tick <= 0 or wheelSize is not
// in [1, 65536]. It has the signature of github.com/RussellLuo/timingwheel's
// constructor.
func NewTimingWheel(tick time.Duration, wheelSize int64, opts ...Option) *TimingWheel {
	cfg := config{wheelSize: DefaultWheelSize}
	for _, o := range opts {
		o(&cfg)
	}
	cfg.tick, cfg.wheelSize = tick, wheelSize
	w, err := newWheel(cfg)
	if err != nil {
		panic(err)
	}
	return w
}

func newWheel(cfg config) (*TimingWheel, error) {
	switch {
	case cfg.tick <= 0:
		return nil, fmt.Errorf("%w: tick must be > 0, got %v", ErrInvalidOption, cfg.tick)
	case cfg.wheelSize < 1:
		return nil, fmt.Errorf("%w: wheel size must be >= 1, got %d", ErrInvalidOption, cfg.wheelSize)
	case cfg.wheelSize > maxWheelSize:
		return nil, fmt.Errorf("%w: wheel size must be <= %d, got %d", ErrInvalidOption, maxWheelSize, cfg.wheelSize)
	case cfg.clockSet && cfg.clock == nil:
		return nil, fmt.Errorf("%w: clock must not be nil", ErrInvalidOption)
	}
	// clock.New() passed by WithClock is the real clock too (package
	// durable passes its own clock on).
	realClock := cfg.clock == nil || reflect.TypeOf(cfg.clock) == realClockType
	if cfg.clock == nil {
		cfg.clock = clock.New()
	}
	size := int64(4)
	for size < cfg.wheelSize {
		size <<= 1
	}
	shift := int(bits.TrailingZeros64(uint64(size)))
	// Level i >= 1 spans 2^(shift + i*(shift-1)) ticks. Enough levels to
	// cover every int64 deadline, if maxLevels allows, and never so many
	// that a level's span overflows.
	maxTick := math.MaxInt64/int64(cfg.tick) + 1
	numLevels := 1 + (max(0, bits.Len64(uint64(maxTick))-shift)+shift-2)/(shift-1)
	numLevels = max(1, min(numLevels, maxLevels, 1+(62-shift)/(shift-1)))
	if cfg.levels > 0 {
		numLevels = min(numLevels, cfg.levels)
	}
	lanes := cfg.lanes
	if lanes <= 0 {
		// Big wheels get fewer lanes, so that a level's lanes stay within
		// 16 MiB.
		lanes = min(defaultLanes(), max(1, (1<<18)/int(size)))
	}
	w := &TimingWheel{
		tick:      int64(cfg.tick),
		size:      size,
		mask:      size - 1,
		sizeShift: uint(shift),
		numLevels: numLevels,
		lanes:     lanes,
		clock:     cfg.clock,
		realClock: realClock,
		exec:      cfg.exec,
		onPanic:   cfg.onPanic,
		logger:    cfg.logger,
		exited:    make(chan struct{}),
		kicks:     make(chan struct{}, 1),
		underway:  underway{idle: make(chan struct{})},
	}
	w.queue = &delayQueue{onMin: w.kickForNewMin}
	w.start = w.clock.Now()
	w.due.exp.Store(noExpiration)
	w.due.lanes = newBuckets(1, lanes, 0)[0].lanes
	return w, nil
}

var realClockType = reflect.TypeOf(clock.New())

// defaultLanes is the number of lanes per bucket: a power of two at least
// four times GOMAXPROCS, so that goroutines running at once rarely share a
// lock or a cache line.
func defaultLanes() int {
	n := 1
	for n < 4*runtime.GOMAXPROCS(0) && n < maxLanes {
		n <<= 1
	}
	return n
}

// Start starts the driver goroutine. Timers scheduled before Start fire
// once it runs, except AfterFunc and ScheduleFunc timers due when they
// are made, whose tasks are handed to the executor at once (see
// AfterFunc). Start is idempotent, and does nothing after Stop. On Linux
// a wheel on the real clock opens a timerfd to wake on (one file
// descriptor, which Stop closes); if the system refuses one, it wakes on a
// runtime timer alone.
func (w *TimingWheel) Start() {
	w.life.Lock()
	defer w.life.Unlock()
	if w.started.Load() || w.stopped.Load() {
		return
	}
	w.started.Store(true)
	w.handing.Lock() // the driver's until it exits; see executor.go
	go w.run()
}

// Stop stops the wheel: after Stop returns no pending timer fires and no
// further task is handed to the executor (one handed over just before may
// still be starting). The timers it kept from running, including those
// that had fired but whose tasks were not handed over yet, stay pending:
// Len counts them and Stop on them returns true. So do timers scheduled
// or reset afterwards, which never fire. Stop is idempotent.
//
// Stop waits for the driver goroutine to exit, unless the driver is in a
// call of the executor (WithExecutor), which may be waiting for the very
// task that calls Stop (a task run inline, or a bounded pool whose
// workers are all busy): then it returns at once, and the driver exits
// when the call returns, handing nothing more over. Like time.Timer's
// Stop, it does not wait for tasks under way: Shutdown does.
func (w *TimingWheel) Stop() {
	w.life.Lock()
	started := w.started.Load()
	if !w.stopped.Swap(true) {
		w.kick()
		if !started {
			close(w.exited)
		}
	}
	w.life.Unlock()
	if started {
		w.handing.Lock() // see executor.go
		//lint:ignore SA2001 taking the lock is the wait
		w.handing.Unlock()
	}
}

// Len returns the number of timers pending: scheduled and neither fired
// nor stopped, including those the wheel's Stop kept from running and
// those made or reset on a stopped wheel. A periodic timer counts while it
// waits for its next run. The count is exact while the driver moves
// timers between levels; a timer stops counting when it fires, before its
// task is handed over, or when a Stop of it returns true. Len locks each
// bucket lane in turn, so it costs a few microseconds per thousand
// buckets: call it to observe, not on a hot path.
func (w *TimingWheel) Len() int {
	n := w.due.pendingCount()
	for i := range w.levels {
		if lv := w.levels[i].Load(); lv != nil {
			for j := range lv.buckets {
				n += lv.buckets[j].pendingCount()
			}
		}
	}
	// Lanes' counts may wrap (see lane.pending); their sum modulo 2^32 is
	// exact, as no wheel holds 2^32 timers (200 GB).
	return int(uint32(n))
}

// AfterFunc waits for duration d and then calls f in the way the executor
// runs tasks (by default in its own goroutine). It returns a Timer that can
// cancel the call with Stop or move it with Reset. d <= 0 runs f as soon as
// possible: on the driver's next pass, or, before Start, by handing it to
// the executor at once, as github.com/RussellLuo/timingwheel does. It
// panics if f is nil.
func (w *TimingWheel) AfterFunc(d time.Duration, f func()) *Timer {
	if f == nil {
		panic("timingwheel: AfterFunc called with nil func")
	}
	t := &Timer{f: f, w: w}
	when, due := w.deadline(d)
	w.schedule(t, when, due, kindFunc)
	return t
}

// AfterFuncAt calls f at deadline, a time on the wheel's clock (for the
// real clock, a time.Now reading or one derived from it, so that its
// monotonic reading is used), saving AfterFunc's clock read when the
// caller has just read the clock. A deadline already past is handled as
// AfterFunc with d <= 0. It panics if f is nil.
func (w *TimingWheel) AfterFuncAt(deadline time.Time, f func()) *Timer {
	if f == nil {
		panic("timingwheel: AfterFuncAt called with nil func")
	}
	t := &Timer{f: f, w: w}
	w.schedule(t, w.nsAt(deadline), false, kindFunc)
	return t
}

// NewTimer returns a Timer that sends the time it fires on its channel C
// after duration d. As with time.Timer since Go 1.23, C has no stale value
// after Stop or Reset returns, and a timer that the program no longer
// references (neither the Timer nor C) is garbage-collected even while
// pending: the wheel holds it weakly (see chantimer.go).
func (w *TimingWheel) NewTimer(d time.Duration) *Timer {
	t := w.newChanTimer()
	when, due := w.deadline(d)
	w.schedule(t.core, when, due, kindChan)
	return &t.Timer
}

// After waits for duration d and then sends the time on the returned
// channel. It is NewTimer(d).C; use NewTimer to be able to stop it. Once
// the program no longer references the channel, the timer is
// garbage-collected, even while pending.
func (w *TimingWheel) After(d time.Duration) <-chan time.Time {
	return w.NewTimer(d).C
}

// schedule arms a new timer t of kind k due at when (ns since start); due
// says the deadline has already passed.
func (w *TimingWheel) schedule(t *Timer, when int64, due bool, k uint64) {
	t.when = when
	if k != kindChan && !w.started.Load() && !w.stopped.Load() && (due || when <= w.now()) {
		w.runBeforeStart(t, k)
		return
	}
	w.insert(t, k, due)
}

// insert links t, which is new or locked by its caller, with state s (its
// kind, and the lock bit unless t is new), into the bucket its deadline
// maps to, and makes it pending there; due puts it in the due bucket. On
// a stopped wheel it is linked all the same: it never fires, Len counts
// it and a Stop of it returns true.
func (w *TimingWheel) insert(t *Timer, s uint64, due bool) {
	b, exp := w.placeFor(t.when, due)
	l := b.lockLaneFor(t)
	l.push(t, nil)
	l.pending++
	if s&locked != 0 {
		t.store(pendingIn(s, l.id))
	} else {
		t.state = pendingIn(s, l.id) // a new timer, not shared yet
	}
	l.mu.Unlock()
	b.arm(exp, w.queue)
}

// now returns the wheel's clock in ns since start.
func (w *TimingWheel) now() int64 {
	if w.realClock {
		return int64(time.Since(w.start))
	}
	return int64(w.clock.Since(w.start))
}

// deadline returns now+d in ns since start, saturating instead of
// overflowing, and whether it is already due (d <= 0).
func (w *TimingWheel) deadline(d time.Duration) (when int64, due bool) {
	now := w.now()
	if d <= 0 {
		return now, true
	}
	return addSaturating(now, int64(d)), false
}

// timeAt converts ns since start to a time on the wheel's clock.
func (w *TimingWheel) timeAt(ns int64) time.Time {
	return w.start.Add(time.Duration(ns))
}

// Sync blocks until the driver has processed every timer due at the
// moment of the call (a timer is due at the end of the grain its deadline
// falls in; see WithTick): each has fired (its task handed to the
// executor, so run already with an inline executor), however far the
// clock jumped before the call. It is meant for tests that drive the
// wheel with a mock clock: advance the clock, then Sync, then assert. It
// returns ErrNotStarted before Start, ErrStopped after Stop, or the
// context's error. It must not be called from a task run inline on the
// driver goroutine.
func (w *TimingWheel) Sync(ctx context.Context) error {
	started := w.started.Load()
	if w.stopped.Load() {
		return ErrStopped
	}
	if !started {
		return ErrNotStarted
	}
	r := syncRequest{upTo: w.now(), done: make(chan struct{})}
	w.syncMu.Lock()
	w.syncReqs = append(w.syncReqs, r)
	w.syncMu.Unlock()
	w.kick()
	select {
	case <-r.done:
		return nil
	case <-w.exited:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
}
