// Package timingwheel is a hierarchical timing wheel for programs that keep
// millions of timers: one per order, session, request or retry.
//
// A TimingWheel keeps timers in buckets, as Kafka's purgatory does: level 0
// has a bucket per tick, and coarser wheels, made as needed, cascade timers
// down as the clock reaches them. A heap of bucket expirations sets how long
// the driver sleeps, so an idle wheel costs no CPU. Scheduling or stopping a
// timer takes one small lock of many and allocates only the Timer.
//
// Timers never fire early: a timer fires at the end of the quarter of a tick
// its deadline falls in (250µs with the default 1ms tick), plus scheduling
// delay. Deadlines are measured on the monotonic clock from the wheel's
// start, so wall-clock changes do not move them.
//
// On Linux the driver of a wheel on the real clock wakes on a timerfd that
// the runtime's netpoller watches, at the instant asked for, whereas an idle
// program's runtime timers fire up to a millisecond late. No thread is held
// while it waits; each started wheel owns one file descriptor.
//
// The code follows a timer's path: it is placed (overflow.go) in a lane of a
// bucket (bucket.go) armed in the delay queue (delayqueue.go); the driver
// (driver.go) sleeps until a bucket is due (sleep.go), fires its timers or
// cascades them to finer buckets under their lane's lock, and hands the
// tasks over (executor.go). timer.go states a timer's statuses, transitions
// and lock order: all there is to how Stop, Reset and firing race.
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

	life     sync.Mutex // orders Start and Stop
	started  atomic.Bool
	stopped  atomic.Bool
	exited   chan struct{}
	wakes    chan struct{} // see wake
	fd       atomic.Pointer[timerfd]
	passing  atomic.Bool // the driver is in a pass; see wakeForNewMin
	syncMu   sync.Mutex
	syncReqs []syncRequest // Sync calls the driver has not taken yet
	handing  sync.Mutex    // see executor.go
	runners  sync.Pool     // of *runner
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
// fires at most a quarter of a tick late, at the end of the quarter its
// deadline falls in, plus scheduling delay. A shorter tick costs more driver
// wake-ups while timers come due; a longer one, fewer levels for far timers.
func WithTick(d time.Duration) Option { return func(c *config) { c.tick = d } }

// WithWheelSize sets the number of buckets per level (default 512, at most
// 65536), rounded up to a power of two and to at least 4, as Netty does, so
// that slot arithmetic is shifts and masks. Each bucket costs about 64 bytes
// per lane (4×GOMAXPROCS lanes, fewer for big wheels).
func WithWheelSize(n int) Option { return func(c *config) { c.wheelSize = int64(n) } }

// WithClock sets the clock the wheel reads (default clock.New(), the real
// clock), for example clock.NewMock() in tests. There, move the mock, then
// call Sync before asserting: a mock's Add runs the timers due up to its
// target and then sets the time, so the driver's sleeper, if set in between,
// learns of the step only when it next looks at the mock (every 10ms of
// real time); Sync fires what is due at once.
func WithClock(c clock.Clock) Option { return func(cfg *config) { cfg.clock, cfg.clockSet = c, true } }

// WithExecutor sets how tasks run: run is called on the driver goroutine
// with each task and may run it inline (fastest, but a slow task delays all
// later timers), hand it to a worker pool, or start a goroutine. The default
// starts a goroutine per task, as time.AfterFunc does. Tasks given to run
// recover their own panics. If run blocks (a bounded pool's workers are
// busy), the driver and later timers wait, but the wheel's Stop does not.
func WithExecutor(run func(task func())) Option { return func(c *config) { c.exec = run } }

// WithPreciseSleep has no effect; it is kept so that old programs build.
//
// Deprecated: the driver wakes precisely by default; remove the option.
func WithPreciseSleep(on bool) Option { return func(*config) {} }

// WithPanicHandler sets the function that receives the value recovered from
// a panicking task. The default logs it with its stack (see WithLogger).
// Either way the wheel and every other timer go on.
func WithPanicHandler(h func(recovered any)) Option { return func(c *config) { c.onPanic = h } }

// WithLogger sets the logger that reports a panicking task, at level Error
// with the attributes "panic" (the value) and "stack", when no
// WithPanicHandler is set: slog.Default() by default.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// New returns a stopped wheel configured by opts; call Start to run it. It
// returns an error wrapping ErrInvalidOption for a tick <= 0, a wheel
// size < 1 or > 65536, or a nil clock.
//
// A new wheel allocates a few KiB. Levels, level 0 included, are allocated
// when first needed and kept for the wheel's lifetime. Each takes 64 bytes
// per bucket per lane: with the default 512 buckets and 4×GOMAXPROCS lanes
// (at most 64), 256 KiB at GOMAXPROCS=2 and 2 MiB at GOMAXPROCS=16.
func New(opts ...Option) (*TimingWheel, error) {
	cfg := config{tick: DefaultTick, wheelSize: DefaultWheelSize}
	for _, o := range opts {
		o(&cfg)
	}
	return newWheel(cfg)
}

// NewTimingWheel returns a stopped wheel with the given tick and wheel size;
// call Start to run it. It panics if tick <= 0 or wheelSize is not in
// [1, 65536]. It has the signature of github.com/RussellLuo/timingwheel's
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
	if cfg.clock == nil {
		cfg.clock = clock.New()
	}
	size := int64(4)
	for size < cfg.wheelSize {
		size <<= 1
	}
	shift := int(bits.TrailingZeros64(uint64(size)))
	// Level i >= 1 spans 2^(shift + i*(shift-1)) ticks: enough levels to
	// cover every int64 deadline, within maxLevels, and none whose span
	// overflows.
	maxTick := math.MaxInt64/int64(cfg.tick) + 1
	numLevels := 1 + (max(0, bits.Len64(uint64(maxTick))-shift)+shift-2)/(shift-1)
	numLevels = max(1, min(numLevels, maxLevels, 1+(62-shift)/(shift-1)))
	if cfg.levels > 0 {
		numLevels = min(numLevels, cfg.levels)
	}
	if cfg.lanes <= 0 {
		// Big wheels get fewer lanes, so a level's lanes stay within 16 MiB.
		cfg.lanes = min(defaultLanes(), max(1, (1<<18)/int(size)))
	}
	w := &TimingWheel{
		tick:      int64(cfg.tick),
		size:      size,
		mask:      size - 1,
		sizeShift: uint(shift),
		numLevels: numLevels,
		lanes:     cfg.lanes,
		clock:     cfg.clock,
		// WithClock(clock.New()) too: package durable passes its clock on.
		realClock: reflect.TypeOf(cfg.clock) == realClockType,
		exec:      cfg.exec,
		onPanic:   cfg.onPanic,
		logger:    cfg.logger,
		exited:    make(chan struct{}),
		wakes:     make(chan struct{}, 1),
		underway:  underway{done: make(chan struct{})},
	}
	w.queue = &delayQueue{onMin: w.wakeForNewMin}
	w.start = w.clock.Now()
	w.due.exp.Store(noExpiration)
	w.due.lanes = newBuckets(1, w.lanes, 0)[0].lanes
	return w, nil
}

var realClockType = reflect.TypeOf(clock.New())

// defaultLanes is the lanes per bucket: a power of two >= 4×GOMAXPROCS, so
// that concurrent goroutines rarely share a lock or a cache line.
func defaultLanes() int {
	n := 1
	for n < 4*runtime.GOMAXPROCS(0) && n < maxLanes {
		n <<= 1
	}
	return n
}

// Start starts the driver goroutine. Timers scheduled earlier fire once it
// runs, except AfterFunc and ScheduleFunc timers due when made, whose tasks
// go to the executor at once. Start is idempotent and a no-op after Stop. On
// Linux a wheel on the real clock wakes on a timerfd (one file descriptor,
// which Stop closes), or on a runtime timer if the system refuses one.
func (w *TimingWheel) Start() {
	w.life.Lock()
	defer w.life.Unlock()
	if w.started.Load() || w.stopped.Load() {
		return
	}
	w.started.Store(true)
	w.handing.Lock() // the driver's until it exits; see executor.go
	go w.drive()
}

// Stop stops the wheel: once it returns, no pending timer fires and no
// further task reaches the executor (one just handed over may still be
// starting). Timers it kept from running, including fired ones not handed
// over, stay pending, as do those scheduled or reset afterwards, which never
// fire: Len counts them and Stop on them returns true. Stop is idempotent.
//
// Stop waits for the driver to exit, unless the driver is in a call of a
// custom executor, which may be waiting for the task calling Stop (a task
// run inline, or a bounded pool whose workers are all busy): then it
// returns at once, and the driver exits when the call returns, handing
// nothing more over. Before Start, a task due when it was made (see
// AfterFunc) that is in such a call is treated the same way. Like time.Timer's Stop, it does not wait for tasks
// under way; Shutdown does.
func (w *TimingWheel) Stop() {
	w.life.Lock()
	started := w.started.Load()
	if !w.stopped.Swap(true) {
		w.wake()
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

// Shutdown calls Stop, then waits until every task handed to the executor
// has returned, or until ctx ends, returning ctx.Err() (the tasks go on); a
// task an executor never runs is waited for until then. It must not be
// called from a task of the wheel, which would wait for itself; call Stop.
func (w *TimingWheel) Shutdown(ctx context.Context) error {
	w.Stop()
	if w.underway.n.Load() == 0 {
		w.underway.closeDone()
	}
	select {
	case <-w.underway.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Len returns the number of pending timers, including those the wheel's Stop
// kept from running and those made or reset on a stopped wheel. A periodic
// timer counts while it waits for its next run. The count is exact while the
// driver moves timers between levels; a timer stops counting when it fires,
// before its task is handed over, or when its Stop returns true. Len locks
// each lane in turn, a few microseconds per thousand buckets: use it to
// observe, not on a hot path.
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

// AfterFunc waits for duration d and then calls f as the executor runs tasks
// (by default in its own goroutine). The returned Timer can cancel the call
// with Stop or move it with Reset. d <= 0 runs f as soon as possible: on the
// driver's next pass or, before Start, by handing it to the executor at
// once, as github.com/RussellLuo/timingwheel does. It panics if f is nil.
func (w *TimingWheel) AfterFunc(d time.Duration, f func()) *Timer {
	if f == nil {
		panic("timingwheel: AfterFunc called with nil func")
	}
	when, due := w.deadline(d)
	return w.schedule(&Timer{f: f, w: w}, when, due, kindFunc)
}

// AfterFuncAt calls f at deadline, a time on the wheel's clock (for the real
// clock, time.Now or a time derived from it, whose monotonic reading is
// used), saving AfterFunc's clock read for a caller that just read it. A
// past deadline is handled as AfterFunc with d <= 0. It panics if f is nil.
func (w *TimingWheel) AfterFuncAt(deadline time.Time, f func()) *Timer {
	if f == nil {
		panic("timingwheel: AfterFuncAt called with nil func")
	}
	return w.schedule(&Timer{f: f, w: w}, w.nsAt(deadline), false, kindFunc)
}

// NewTimer returns a Timer that sends the time it fires on its channel C
// after duration d. As with time.Timer since Go 1.23, C has no stale value
// after Stop or Reset returns, and a timer the program no longer references
// (neither the Timer nor C) is garbage-collected even while pending.
func (w *TimingWheel) NewTimer(d time.Duration) *Timer {
	t := w.newChanTimer()
	when, due := w.deadline(d)
	w.schedule(t.core, when, due, kindChan)
	return &t.Timer
}

// After waits for duration d and then sends the time on the returned
// channel, NewTimer(d).C; use NewTimer to stop it. The timer is
// garbage-collected, even while pending, once the channel is unreachable.
func (w *TimingWheel) After(d time.Duration) <-chan time.Time { return w.NewTimer(d).C }

// schedule arms t, a new timer of kind k due at when (ns since start), and
// returns it; due says the deadline has already passed.
func (w *TimingWheel) schedule(t *Timer, when int64, due bool, k uint64) *Timer {
	t.when = when
	if k != kindChan && !w.started.Load() && !w.stopped.Load() && (due || when <= w.now()) && w.handBeforeStart(t, k) {
		return t
	}
	w.insert(t, k, due)
	return t
}

// insert makes t pending in the bucket its deadline maps to, or the due
// bucket if due; t is new or locked by its caller, and s is its kind, plus
// the lock bit unless t is new. A stopped wheel links it too (see Stop).
func (w *TimingWheel) insert(t *Timer, s uint64, due bool) {
	b, exp := w.placeFor(t.when, due)
	l := b.lockLaneFor(t)
	l.push(t, nil)
	l.pending++
	if s&locked != 0 {
		t.move(s, pendingIn(s, l.id), byOwner)
	} else {
		t.move(s, pendingIn(s, l.id), byCreator)
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

// deadline returns now+d (ns since start, saturating) and whether d <= 0.
func (w *TimingWheel) deadline(d time.Duration) (when int64, due bool) {
	now := w.now()
	if d <= 0 {
		return now, true
	}
	return addSaturating(now, int64(d)), false
}

// nsAt converts a time on the wheel's clock to ns since start, clamped to
// [0, MaxInt64].
func (w *TimingWheel) nsAt(t time.Time) int64 {
	return max(0, int64(t.Sub(w.start)))
}

// addSaturating returns a+b, clamped to the int64 range.
func addSaturating(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	if b < 0 && a < math.MinInt64-b {
		return math.MinInt64
	}
	return a + b
}

// timeAt converts ns since start to a time on the wheel's clock.
func (w *TimingWheel) timeAt(ns int64) time.Time { return w.start.Add(time.Duration(ns)) }

// Sync blocks until every timer due when it is called (at the end of the
// grain its deadline falls in; see WithTick) has fired, its task handed to
// the executor (so already run by an inline executor), however far the clock
// jumped. It is for tests on a mock clock: advance it, Sync, then assert. It
// returns ErrNotStarted before Start, ErrStopped after Stop, or ctx.Err().
// It must not be called from a task run inline by the driver.
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
	w.wake()
	select {
	case <-r.done:
		return nil
	case <-w.exited:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
}
