package timingwheel

import (
	"bytes"
	"context"
	"errors"
	"log"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
	"weak"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func inline(task func()) { task() }

// mockWheel returns a started wheel on a mock clock that runs tasks inline,
// so that after advance returns every due task has run.
func mockWheel(t testing.TB, opts ...Option) (*TimingWheel, *clock.Mock) {
	t.Helper()
	mock := clock.NewMock()
	w, err := New(append([]Option{WithClock(mock), WithExecutor(inline)}, opts...)...)
	require.NoError(t, err)
	w.Start()
	t.Cleanup(w.Stop)
	return w, mock
}

// realWheel returns a started wheel on the real clock whose executor is
// named: "inline" runs tasks on the driver, anything else is the default.
func realWheel(t testing.TB, executor string, opts ...Option) *TimingWheel {
	t.Helper()
	if executor == "inline" {
		opts = append(opts, WithExecutor(inline))
	}
	w, err := New(opts...)
	require.NoError(t, err)
	w.Start()
	t.Cleanup(w.Stop)
	return w
}

// advance moves the mock clock forward by d and waits for the driver.
func advance(t testing.TB, w *TimingWheel, mock *clock.Mock, d time.Duration) {
	t.Helper()
	mock.Add(d)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, w.Sync(ctx))
}

// firings records the mock time at which each labelled task ran.
type firings struct {
	mu sync.Mutex
	at map[int][]time.Time
}

func newFirings() *firings { return &firings{at: map[int][]time.Time{}} }

func (f *firings) task(c clock.Clock, id int) func() {
	return func() {
		f.mu.Lock()
		f.at[id] = append(f.at[id], c.Now())
		f.mu.Unlock()
	}
}

func (f *firings) count(id int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.at[id])
}

func (f *firings) times(id int) []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.at[id]...)
}

// Rule 1: never early, and at most one tick late.
func TestFiresNeverEarlyAndWithinOneTick(t *testing.T) {
	w, mock := mockWheel(t)
	start := mock.Now()
	fired := newFirings()
	delays := []time.Duration{
		300 * time.Microsecond, time.Millisecond, 1500 * time.Microsecond,
		7*time.Millisecond + 1, 511 * time.Millisecond, 512 * time.Millisecond,
		513*time.Millisecond + 250*time.Microsecond, 1100 * time.Millisecond,
	}
	for i, d := range delays {
		w.AfterFunc(d, fired.task(mock, i))
	}
	// Visit the moments around each deadline: just before it, at it, and
	// one tick after it.
	var checkpoints []time.Duration
	for _, d := range delays {
		checkpoints = append(checkpoints, d-100*time.Microsecond, d-1, d, d+time.Millisecond)
	}
	slices.Sort(checkpoints)
	for _, c := range checkpoints {
		if now := mock.Now().Sub(start); c > now {
			advance(t, w, mock, c-now)
		}
		now := mock.Now().Sub(start)
		for i, d := range delays {
			if now < d {
				require.Zero(t, fired.count(i), "timer %v fired early, at %v", d, now)
			}
			if now >= d+time.Millisecond {
				require.Equal(t, 1, fired.count(i), "timer %v not fired at %v", d, now)
			}
		}
	}
	for i, d := range delays {
		at := fired.times(i)[0].Sub(start)
		assert.GreaterOrEqual(t, at, d)
		assert.LessOrEqual(t, at, d+time.Millisecond)
	}
}

// jumpingClock is a mock clock whose wall time can jump while the elapsed
// (monotonic) time it reports through Since does not, as the real clock's
// does when the system time is set.
type jumpingClock struct {
	*clock.Mock
	jump time.Duration
}

func (c *jumpingClock) Now() time.Time { return c.Mock.Now().Add(c.jump) }

// Deadlines are offsets on the monotonic clock: a jump of the wall clock
// neither fires a timer early nor delays it.
func TestWallClockJumpDoesNotMoveDeadlines(t *testing.T) {
	mock := clock.NewMock()
	jc := &jumpingClock{Mock: mock}
	w, err := New(WithClock(jc), WithExecutor(inline))
	require.NoError(t, err)
	w.Start()
	defer w.Stop()
	fired := newFirings()
	w.AfterFunc(10*time.Millisecond, fired.task(mock, 0))
	jc.jump = time.Hour // the wall clock is set an hour ahead
	advance(t, w, mock, 9*time.Millisecond)
	assert.Zero(t, fired.count(0), "fired early after a forward jump")
	jc.jump = -time.Hour // and then an hour back
	advance(t, w, mock, time.Millisecond)
	assert.Equal(t, 1, fired.count(0), "delayed by a backward jump")
}

// Timers far away cascade down through the overflow levels and still fire
// on time.
func TestCascadesFromOverflowLevels(t *testing.T) {
	w, mock := mockWheel(t, WithWheelSize(8))
	start := mock.Now()
	fired := newFirings()
	delays := []time.Duration{9 * time.Millisecond, 70 * time.Millisecond, 3*time.Second + 7*time.Millisecond, 2 * time.Minute}
	for i, d := range delays {
		w.AfterFunc(d, fired.task(mock, i))
	}
	// Jump close to each deadline, then walk in ticks across it.
	for i, d := range delays {
		now := mock.Now().Sub(start)
		advance(t, w, mock, d-5*time.Millisecond-now)
		require.Zero(t, fired.count(i))
		for range 6 {
			advance(t, w, mock, time.Millisecond)
		}
		require.Equal(t, 1, fired.count(i), "timer %v", d)
		at := fired.times(i)[0].Sub(start)
		assert.GreaterOrEqual(t, at, d)
		assert.LessOrEqual(t, at, d+time.Millisecond)
	}
	assert.Zero(t, w.Len())
}

// Rule 2: d <= 0 fires at once; huge durations neither overflow nor fire.
func TestZeroNegativeAndHugeDurations(t *testing.T) {
	w, mock := mockWheel(t)
	fired := newFirings()
	w.AfterFunc(0, fired.task(mock, 0))
	w.AfterFunc(-time.Hour, fired.task(mock, 1))
	w.AfterFunc(math.MinInt64, fired.task(mock, 2))
	huge := w.AfterFunc(math.MaxInt64, fired.task(mock, 3))
	century := w.AfterFunc(100*365*24*time.Hour, fired.task(mock, 4))
	advance(t, w, mock, 0)
	for i := range 3 {
		assert.Equal(t, 1, fired.count(i), "timer %d", i)
	}
	for range 5 {
		advance(t, w, mock, 10*365*24*time.Hour)
	}
	assert.Zero(t, fired.count(3))
	assert.Zero(t, fired.count(4))
	assert.Equal(t, 2, w.Len())
	assert.True(t, huge.Stop())
	assert.True(t, century.Stop())
	assert.Zero(t, w.Len())
}

// A deadline beyond the top level's span comes round again and fires on
// time: the top level's implicit round count.
func TestBeyondTopLevelSpanFiresOnTime(t *testing.T) {
	const levels = 8
	w, mock := mockWheel(t, WithWheelSize(4), WithTick(time.Millisecond), func(c *config) { c.levels = levels })
	require.Equal(t, levels, w.numLevels)
	// The top level, 7, has buckets of 2^7 ticks and spans 2^9.
	span := time.Duration(1<<(2+levels-1)) * time.Millisecond
	start := mock.Now()
	fired := newFirings()
	d := 3*span + 37*time.Millisecond
	w.AfterFunc(d, fired.task(mock, 0))
	for _, hop := range []time.Duration{span, span, span} {
		advance(t, w, mock, hop)
		require.Zero(t, fired.count(0))
	}
	for mock.Now().Sub(start) < d+2*time.Millisecond {
		advance(t, w, mock, time.Millisecond)
		if mock.Now().Sub(start) < d {
			require.Zero(t, fired.count(0))
		}
	}
	require.Equal(t, 1, fired.count(0))
	at := fired.times(0)[0].Sub(start)
	assert.GreaterOrEqual(t, at, d)
	assert.LessOrEqual(t, at, d+time.Millisecond)
}

// Rule 3: Stop returns true iff it kept the task from running.
func TestStop(t *testing.T) {
	w, mock := mockWheel(t)
	fired := newFirings()
	a := w.AfterFunc(10*time.Millisecond, fired.task(mock, 0))
	b := w.AfterFunc(10*time.Millisecond, fired.task(mock, 1))
	assert.Equal(t, 2, w.Len())
	assert.True(t, a.Stop())
	assert.False(t, a.Stop(), "second Stop")
	assert.Equal(t, 1, w.Len())
	advance(t, w, mock, 20*time.Millisecond)
	assert.Zero(t, fired.count(0))
	assert.Equal(t, 1, fired.count(1))
	assert.False(t, b.Stop(), "Stop after firing")
	assert.Zero(t, w.Len())
}

// Rule 4: Reset moves a pending timer and re-arms a fired or stopped one.
func TestReset(t *testing.T) {
	w, mock := mockWheel(t)
	start := mock.Now()
	fired := newFirings()
	tm := w.AfterFunc(10*time.Millisecond, fired.task(mock, 0))
	advance(t, w, mock, 5*time.Millisecond)
	assert.True(t, tm.Reset(20*time.Millisecond), "Reset of a pending timer")
	advance(t, w, mock, 10*time.Millisecond) // past the old deadline
	assert.Zero(t, fired.count(0), "fired at the old deadline")
	assert.Equal(t, 1, w.Len())
	advance(t, w, mock, 11*time.Millisecond)
	require.Equal(t, 1, fired.count(0))
	assert.Equal(t, 25*time.Millisecond, fired.times(0)[0].Sub(start))

	assert.False(t, tm.Reset(time.Millisecond), "Reset of a fired timer")
	advance(t, w, mock, time.Millisecond)
	assert.Equal(t, 2, fired.count(0))

	assert.False(t, tm.Reset(time.Millisecond))
	assert.True(t, tm.Stop())
	assert.False(t, tm.Reset(3*time.Millisecond), "Reset of a stopped timer")
	advance(t, w, mock, 3*time.Millisecond)
	assert.Equal(t, 3, fired.count(0))
	assert.Zero(t, w.Len())
}

// AfterFuncAt and ResetAt take absolute deadlines on the wheel's clock.
func TestAbsoluteDeadlines(t *testing.T) {
	w, mock := mockWheel(t)
	start := mock.Now()
	fired := newFirings()
	a := w.AfterFuncAt(start.Add(7*time.Millisecond+300*time.Microsecond), fired.task(mock, 0))
	w.AfterFuncAt(start.Add(-time.Hour), fired.task(mock, 1))
	advance(t, w, mock, 0)
	assert.Equal(t, 1, fired.count(1), "a past deadline fires at once")
	advance(t, w, mock, 7*time.Millisecond)
	assert.Zero(t, fired.count(0))
	assert.True(t, a.ResetAt(start.Add(20*time.Millisecond)))
	advance(t, w, mock, 5*time.Millisecond)
	assert.Zero(t, fired.count(0), "fired at the old deadline")
	for range 8 {
		advance(t, w, mock, time.Millisecond)
	}
	require.Equal(t, 1, fired.count(0))
	assert.Equal(t, 20*time.Millisecond, fired.times(0)[0].Sub(start))
	assert.False(t, a.ResetAt(mock.Now()))
	advance(t, w, mock, 0)
	assert.Equal(t, 2, fired.count(0))
	assert.PanicsWithValue(t, "timingwheel: AfterFuncAt called with nil func", func() { w.AfterFuncAt(start, nil) })
}

// Rule 5: ScheduleFunc with Every keeps its cadence, skips runs missed
// while the driver was stalled, and stops.
func TestScheduleFuncEvery(t *testing.T) {
	w, mock := mockWheel(t)
	start := mock.Now()
	fired := newFirings()
	entered, release := make(chan struct{}), make(chan struct{})
	tm := w.ScheduleFunc(Every(10*time.Millisecond), func() {
		fired.task(mock, 0)()
		if fired.count(0) == 5 {
			close(entered)
			<-release // the driver stalls inside this run
		}
	})
	for range 49 {
		advance(t, w, mock, time.Millisecond)
	}
	require.Equal(t, 4, fired.count(0))
	for i, at := range fired.times(0) {
		assert.Equal(t, time.Duration(i+1)*10*time.Millisecond, at.Sub(start), "run %d drifted", i)
	}
	assert.Equal(t, 1, w.Len(), "a periodic timer counts while waiting")

	mock.Add(time.Millisecond) // run 5, at 50ms, stalls
	<-entered
	mock.Add(100 * time.Millisecond)
	close(release)
	advance(t, w, mock, 0)
	// Ten runs were missed (60..150ms): one late run, not ten.
	require.Equal(t, 6, fired.count(0))
	assert.Equal(t, 150*time.Millisecond, fired.times(0)[5].Sub(start))
	// Back on cadence: the next run is at 160ms.
	for range 9 {
		advance(t, w, mock, time.Millisecond)
	}
	assert.Equal(t, 6, fired.count(0))
	advance(t, w, mock, time.Millisecond)
	require.Equal(t, 7, fired.count(0))
	assert.Equal(t, 160*time.Millisecond, fired.times(0)[6].Sub(start))

	assert.True(t, tm.Stop())
	advance(t, w, mock, time.Second)
	assert.Equal(t, 7, fired.count(0))
	assert.False(t, tm.Stop())
	assert.Zero(t, w.Len())
}

// A Reset during a run schedules the next run, but it starts only after
// the current one returns.
func TestScheduleFuncRunsNeverOverlap(t *testing.T) {
	mock := clock.NewMock()
	w, err := New(WithClock(mock)) // a goroutine per run
	require.NoError(t, err)
	w.Start()
	defer w.Stop()
	var running, overlaps, runs atomic.Int32
	entered, release := make(chan struct{}, 4), make(chan struct{})
	tm := w.ScheduleFunc(Every(10*time.Millisecond), func() {
		if running.Add(1) > 1 {
			overlaps.Add(1)
		}
		if runs.Add(1) == 1 {
			entered <- struct{}{}
			<-release
		}
		running.Add(-1)
	})
	mock.Add(10 * time.Millisecond)
	<-entered
	assert.True(t, tm.Reset(time.Millisecond))
	advance(t, w, mock, time.Millisecond) // the next run is due and handed over
	assert.EqualValues(t, 1, runs.Load(), "a run started while the first was running")
	close(release)
	require.Eventually(t, func() bool { return runs.Load() == 2 }, 5*time.Second, time.Millisecond)
	assert.Zero(t, overlaps.Load())
	assert.True(t, tm.Stop())
}

// slowScheduler blocks in Next until released.
type slowScheduler struct {
	entered, release chan struct{}
}

func (s slowScheduler) Next(prev time.Time) time.Time {
	if !prev.IsZero() && prev.UnixNano() > 0 {
		s.entered <- struct{}{}
		<-s.release
	}
	return prev.Add(time.Millisecond)
}

// Stop does not wait for a Scheduler's Next, which runs while the timer is
// still executing.
func TestStopDoesNotWaitForSchedulerNext(t *testing.T) {
	mock := clock.NewMock()
	mock.Add(time.Second) // so that the first Next (from now) does not block
	w, err := New(WithClock(mock))
	require.NoError(t, err)
	w.Start()
	defer w.Stop()
	s := slowScheduler{entered: make(chan struct{}, 1), release: make(chan struct{})}
	first := true
	s2 := schedulerFunc(func(prev time.Time) time.Time {
		if first {
			first = false
			return prev.Add(time.Millisecond)
		}
		return s.Next(prev)
	})
	var runs atomic.Int32
	tm := w.ScheduleFunc(s2, func() { runs.Add(1) })
	mock.Add(time.Millisecond)
	<-s.entered // the run is over and Next blocks
	stopped := make(chan bool)
	go func() { stopped <- tm.Stop() }()
	select {
	case ok := <-stopped:
		assert.True(t, ok)
	case <-time.After(5 * time.Second):
		t.Fatal("Stop waited for Scheduler.Next")
	}
	close(s.release)
	require.NoError(t, w.Sync(context.Background()))
	assert.Zero(t, w.Len())
	assert.EqualValues(t, 1, runs.Load())
}

type schedulerFunc func(time.Time) time.Time

func (f schedulerFunc) Next(prev time.Time) time.Time { return f(prev) }

// countdown is a Scheduler that ends after n runs.
type countdown struct {
	n int
	d time.Duration
}

func (c *countdown) Next(prev time.Time) time.Time {
	if c.n == 0 {
		return time.Time{}
	}
	c.n--
	return prev.Add(c.d)
}

func TestScheduleFuncEndsOnZeroTime(t *testing.T) {
	w, mock := mockWheel(t)
	fired := newFirings()
	w.ScheduleFunc(&countdown{n: 3, d: time.Millisecond}, fired.task(mock, 0))
	for range 10 {
		advance(t, w, mock, time.Millisecond)
	}
	assert.Equal(t, 3, fired.count(0))
	assert.Zero(t, w.Len())

	never := w.ScheduleFunc(&countdown{n: 0}, fired.task(mock, 1))
	advance(t, w, mock, time.Second)
	assert.Zero(t, fired.count(1))
	assert.False(t, never.Stop())
}

// No run starts after Stop returns, even one that fired but was not yet
// started by the executor.
func TestScheduleFuncStopBeforeQueuedRunStarts(t *testing.T) {
	var queued []func()
	var mu sync.Mutex
	deferExec := func(task func()) { mu.Lock(); queued = append(queued, task); mu.Unlock() }
	w, mock := mockWheel(t, WithExecutor(deferExec))
	var runs atomic.Int32
	tm := w.ScheduleFunc(Every(time.Millisecond), func() { runs.Add(1) })
	advance(t, w, mock, time.Millisecond)
	mu.Lock()
	require.Len(t, queued, 1)
	task := queued[0]
	mu.Unlock()
	assert.True(t, tm.Stop())
	task()
	assert.Zero(t, runs.Load())
}

// Stopping or resetting a periodic timer during its run ends or moves the
// schedule, with no second timer left behind.
func TestScheduleFuncStopAndResetFromItsOwnRun(t *testing.T) {
	w, mock := mockWheel(t)
	var runs atomic.Int32
	var tm *Timer
	tm = w.ScheduleFunc(Every(time.Millisecond), func() {
		if runs.Add(1) == 2 {
			assert.True(t, tm.Stop())
		}
	})
	for range 5 {
		advance(t, w, mock, time.Millisecond)
	}
	assert.EqualValues(t, 2, runs.Load())
	assert.Zero(t, w.Len())

	var resets atomic.Int32
	var rt *Timer
	start := mock.Now()
	fired := newFirings()
	rt = w.ScheduleFunc(Every(time.Millisecond), func() {
		fired.task(mock, 0)()
		if resets.Add(1) == 1 {
			assert.True(t, rt.Reset(10*time.Millisecond))
		}
	})
	for range 11 {
		advance(t, w, mock, time.Millisecond)
	}
	times := fired.times(0)
	require.Len(t, times, 2)
	assert.Equal(t, time.Millisecond, times[0].Sub(start))
	assert.Equal(t, 11*time.Millisecond, times[1].Sub(start))
	assert.Equal(t, 1, w.Len())
	assert.True(t, rt.Stop())
}

// Rule 6: channel timers deliver no stale value after Stop or Reset.
func TestChannelTimer(t *testing.T) {
	w, mock := mockWheel(t)
	start := mock.Now()
	tm := w.NewTimer(5 * time.Millisecond)
	require.NotNil(t, tm.C)
	advance(t, w, mock, 5*time.Millisecond)
	select {
	case at := <-tm.C:
		assert.Equal(t, 5*time.Millisecond, at.Sub(start))
	default:
		t.Fatal("no value on C")
	}

	// Fired but not received: Stop removes the value and reports true.
	tm.Reset(time.Millisecond)
	advance(t, w, mock, time.Millisecond)
	assert.True(t, tm.Stop())
	assertNoValue(t, tm.C)
	assert.False(t, tm.Stop())

	// Fired but not received: Reset drops the stale value.
	tm.Reset(time.Millisecond)
	advance(t, w, mock, time.Millisecond)
	assert.True(t, tm.Reset(10*time.Millisecond))
	assertNoValue(t, tm.C)
	advance(t, w, mock, 10*time.Millisecond)
	select {
	case <-tm.C:
	default:
		t.Fatal("no value after Reset")
	}

	after := w.After(time.Millisecond)
	advance(t, w, mock, time.Millisecond)
	select {
	case <-after:
	default:
		t.Fatal("After sent nothing")
	}
	assert.Zero(t, w.Len())
}

// The time sent on C is the time the timer fired, never before its
// deadline, even when an earlier task of the same pass took a while.
func TestChannelTimerSendsTheTimeItFired(t *testing.T) {
	w, mock := mockWheel(t)
	var made time.Time
	var ct *Timer
	w.AfterFunc(time.Millisecond, func() {
		mock.Add(5 * time.Millisecond) // a task that takes 5ms
		made = mock.Now()
		ct = w.NewTimer(0)
	})
	advance(t, w, mock, time.Millisecond)
	select {
	case v := <-ct.C:
		assert.False(t, v.Before(made), "sent %v, before the timer was made at %v", v, made)
	default:
		t.Fatal("no value on C")
	}
}

func assertNoValue(t *testing.T, c <-chan time.Time) {
	t.Helper()
	select {
	case v := <-c:
		t.Fatalf("stale value %v", v)
	default:
	}
}

// Rule 7: tasks may call AfterFunc, Stop and Reset, their own timer's
// included, with an inline executor, without deadlock.
func TestTasksReenterTheWheelInline(t *testing.T) {
	w, mock := mockWheel(t)
	fired := newFirings()
	var self *Timer
	other := w.AfterFunc(time.Hour, fired.task(mock, 9))
	var rounds atomic.Int32
	self = w.AfterFunc(time.Millisecond, func() {
		fired.task(mock, 0)()
		assert.False(t, self.Stop(), "own Stop while running")
		if rounds.Add(1) < 3 {
			assert.False(t, self.Reset(time.Millisecond))
		}
		assert.True(t, other.Reset(time.Hour))
		w.AfterFunc(0, fired.task(mock, 1))
	})
	for range 5 {
		advance(t, w, mock, time.Millisecond)
	}
	assert.Equal(t, 3, fired.count(0))
	assert.Equal(t, 3, fired.count(1))
	assert.Zero(t, fired.count(9))
	assert.True(t, other.Stop())
}

// Rule 8: a panicking task goes to the handler and the wheel goes on.
func TestPanicHandler(t *testing.T) {
	var got []any
	var mu sync.Mutex
	w, mock := mockWheel(t, WithPanicHandler(func(r any) { mu.Lock(); got = append(got, r); mu.Unlock() }))
	fired := newFirings()
	w.AfterFunc(time.Millisecond, func() { panic("boom") })
	w.AfterFunc(time.Millisecond, fired.task(mock, 0))
	w.ScheduleFunc(Every(time.Millisecond), func() { panic("tick") })
	advance(t, w, mock, time.Millisecond)
	advance(t, w, mock, time.Millisecond)
	w.AfterFunc(time.Millisecond, fired.task(mock, 1))
	advance(t, w, mock, time.Millisecond)
	mu.Lock()
	assert.Contains(t, got, "boom")
	assert.Contains(t, got, "tick")
	assert.GreaterOrEqual(t, len(got), 4, "the periodic task keeps running after a panic")
	mu.Unlock()
	assert.Equal(t, 1, fired.count(0))
	assert.Equal(t, 1, fired.count(1))
}

func TestDefaultPanicHandlerLogsStack(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	prev := log.Writer()
	log.SetOutput(writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return buf.Write(p) }))
	defer log.SetOutput(prev)
	w, mock := mockWheel(t)
	w.AfterFunc(0, func() { panic("kaboom") })
	advance(t, w, mock, 0)
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	assert.Contains(t, out, "kaboom")
	assert.Contains(t, out, "goroutine ", "a stack trace")
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// The default executor runs each task in its own goroutine and recovers
// its panic.
func TestDefaultExecutor(t *testing.T) {
	mock := clock.NewMock()
	panics := make(chan any, 1)
	w, err := New(WithClock(mock), WithPanicHandler(func(r any) { panics <- r }))
	require.NoError(t, err)
	w.Start()
	defer w.Stop()
	done := make(chan struct{})
	w.AfterFunc(time.Millisecond, func() { close(done) })
	w.AfterFunc(time.Millisecond, func() { panic("in goroutine") })
	mock.Add(time.Millisecond)
	<-done
	assert.Equal(t, "in goroutine", <-panics)
}

// Rule 9: Start and Stop are idempotent, nothing fires after Stop, and
// the driver goroutine exits (goleak checks every test).
func TestStartStopLifecycle(t *testing.T) {
	mock := clock.NewMock()
	w, err := New(WithClock(mock), WithExecutor(inline))
	require.NoError(t, err)
	fired := newFirings()
	ctx := context.Background()
	assert.ErrorIs(t, w.Sync(ctx), ErrNotStarted)

	early := w.AfterFunc(time.Millisecond, fired.task(mock, 0))
	w.Start()
	w.Start()
	advance(t, w, mock, time.Millisecond)
	assert.Equal(t, 1, fired.count(0), "a timer scheduled before Start fires")
	assert.False(t, early.Stop())

	pending := w.AfterFunc(time.Millisecond, fired.task(mock, 1))
	w.Stop()
	w.Stop()
	assert.ErrorIs(t, w.Sync(ctx), ErrStopped)
	mock.Add(time.Second)
	after := w.AfterFunc(0, fired.task(mock, 2))
	w.Start()
	mock.Add(time.Second)
	assert.Zero(t, fired.count(1))
	assert.Zero(t, fired.count(2))
	assert.True(t, pending.Stop(), "it was pending and never fired")
	// A timer made after Stop never runs, so Stop reports it kept it from
	// running: exactly one of the two still holds.
	assert.True(t, after.Stop())
	assert.False(t, after.Stop())
	assert.False(t, after.Reset(time.Millisecond))
	assert.True(t, after.Stop())
}

func TestStopWithoutStart(t *testing.T) {
	w, err := New()
	require.NoError(t, err)
	w.Stop()
	w.Start()
	assert.ErrorIs(t, w.Sync(context.Background()), ErrStopped)
}

func TestSyncHonoursContext(t *testing.T) {
	w, err := New(WithExecutor(inline))
	require.NoError(t, err)
	w.Start()
	defer w.Stop()
	block := make(chan struct{})
	w.AfterFunc(0, func() { <-block })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err = w.Sync(ctx)
	close(block)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

// A stopped or fired timer is not referenced by the wheel, and holds no
// links into it.
func TestStoppedAndFiredTimersAreReleased(t *testing.T) {
	w, mock := mockWheel(t)
	ptrs := make([]weak.Pointer[Timer], 0, 200)
	for i := range 200 {
		tm := w.AfterFunc(time.Duration(i%3)*time.Millisecond+time.Millisecond, func() {})
		ptrs = append(ptrs, weak.Make(tm))
		if i%2 == 0 {
			require.True(t, tm.Stop())
			assert.False(t, inAnyLane(w, tm), "a stopped timer is in no lane")
			assert.Equal(t, statusIdle, status(tm.load()))
		}
	}
	advance(t, w, mock, 10*time.Millisecond)
	require.Zero(t, w.Len())
	// No lane keeps a pointer to a timer it no longer holds, in its items'
	// spare capacity or in its inline slots.
	for i := range w.levels {
		lv := w.levels[i].Load()
		if lv == nil {
			continue
		}
		for j := range lv.buckets {
			for k := range lv.buckets[j].lanes {
				l := &lv.buckets[j].lanes[k]
				for _, tm := range l.items[:cap(l.items)] {
					require.Nil(t, tm)
				}
				for _, tm := range l.inline {
					require.Nil(t, tm)
				}
			}
		}
	}
	runtime.GC()
	runtime.GC()
	alive := 0
	for _, p := range ptrs {
		if p.Value() != nil {
			alive++
		}
	}
	assert.Zero(t, alive, "timers kept alive by the wheel")
}

// Rule 10: bad input gets a clear message naming the argument.
func TestBadInput(t *testing.T) {
	_, err := New(WithTick(0))
	require.ErrorIs(t, err, ErrInvalidOption)
	assert.Contains(t, err.Error(), "tick")
	_, err = New(WithWheelSize(0))
	require.ErrorIs(t, err, ErrInvalidOption)
	assert.Contains(t, err.Error(), "wheel size")
	_, err = New(WithWheelSize(65537))
	require.ErrorIs(t, err, ErrInvalidOption)
	assert.Contains(t, err.Error(), "wheel size must be <= 65536")
	w65536, err := New(WithWheelSize(65536))
	require.NoError(t, err, "the largest wheel size")
	w65536.Stop()
	_, err = New(WithClock(nil))
	require.ErrorIs(t, err, ErrInvalidOption)
	assert.Contains(t, err.Error(), "clock")

	assert.PanicsWithError(t, "timingwheel: invalid option: tick must be > 0, got -1ns", func() { NewTimingWheel(-1, 10) })
	assert.PanicsWithError(t, "timingwheel: invalid option: wheel size must be >= 1, got 0", func() { NewTimingWheel(time.Millisecond, 0) })

	w, err := New()
	require.NoError(t, err)
	defer w.Stop()
	assert.PanicsWithValue(t, "timingwheel: AfterFunc called with nil func", func() { w.AfterFunc(time.Second, nil) })
	assert.PanicsWithValue(t, "timingwheel: ScheduleFunc called with nil func", func() { w.ScheduleFunc(Every(time.Second), nil) })
	assert.PanicsWithValue(t, "timingwheel: ScheduleFunc called with nil Scheduler", func() { w.ScheduleFunc(nil, func() {}) })
	assert.PanicsWithValue(t, "timingwheel: Every called with non-positive duration", func() { Every(0) })

	var zero Timer
	assert.False(t, zero.Stop())
	assert.False(t, zero.Reset(time.Second))
}

func TestTimerIs48Bytes(t *testing.T) {
	// The size class the allocator uses for a Timer, and so the memory of
	// every pending timer: keep it at 48.
	assert.EqualValues(t, 48, unsafe.Sizeof(Timer{}))
	assert.EqualValues(t, 64, unsafe.Sizeof(lane{}), "a lane fills one cache line")
}

func TestWheelSizeRoundsUpToPowerOfTwo(t *testing.T) {
	for _, c := range []struct{ in, want int64 }{{1, 4}, {20, 32}, {512, 512}, {513, 1024}} {
		w := NewTimingWheel(time.Millisecond, c.in)
		assert.Equal(t, c.want, w.size, "wheel size %d", c.in)
		w.Stop()
	}
}

// Rule 11: Len counts exactly the pending timers.
func TestLen(t *testing.T) {
	w, mock := mockWheel(t, WithWheelSize(16))
	var timers []*Timer
	for i := range 1000 {
		timers = append(timers, w.AfterFunc(time.Duration(i+1)*time.Millisecond, func() {}))
	}
	assert.Equal(t, 1000, w.Len())
	for i := 0; i < 1000; i += 4 {
		timers[i].Stop()
	}
	assert.Equal(t, 750, w.Len())
	advance(t, w, mock, 100*time.Millisecond) // fires 1..100ms, less the stopped
	assert.Equal(t, 750-75, w.Len())
	for _, tm := range timers {
		tm.Stop()
	}
	assert.Zero(t, w.Len())
}

// Exactly one of "the task ran" and "a Stop returned true" happens for
// every activation, with Stop, Reset and firing racing on real time, for
// both an inline and the default executor. Resets that return true end an
// activation too.
func TestStressStopResetFireRace(t *testing.T) {
	for _, name := range []string{"inline", "goroutine"} {
		t.Run(name, func(t *testing.T) {
			w := realWheel(t, name, WithTick(100*time.Microsecond), WithWheelSize(16))

			const n, workers, rounds = 400, 4, 300
			var fires, stopped, resetActive, activations atomic.Int64
			var runs sync.WaitGroup
			timers := make([]*Timer, n)
			for i := range timers {
				activations.Add(1)
				timers[i] = w.AfterFunc(time.Duration(i%7)*100*time.Microsecond, func() { fires.Add(1) })
			}
			var wg sync.WaitGroup
			for g := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for r := range rounds {
						tm := timers[(g*131+r*17)%n]
						if r%3 == 0 {
							if tm.Stop() {
								stopped.Add(1)
							}
							continue
						}
						activations.Add(1)
						if tm.Reset(time.Duration(r%5) * 100 * time.Microsecond) {
							resetActive.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			runs.Wait()
			for _, tm := range timers {
				if tm.Stop() {
					stopped.Add(1)
				}
			}
			// Tasks already handed to goroutines may still be finishing.
			require.Eventually(t, func() bool {
				return fires.Load()+stopped.Load()+resetActive.Load() == activations.Load()
			}, 5*time.Second, time.Millisecond,
				"fires %d + stops %d + active resets %d != activations %d",
				fires.Load(), stopped.Load(), resetActive.Load(), activations.Load())
			assert.Zero(t, w.Len())
		})
	}
}

// Many goroutines stopping the same timer: exactly one wins.
func TestConcurrentStopsExactlyOneWins(t *testing.T) {
	w, err := New(WithExecutor(inline), WithTick(50*time.Microsecond))
	require.NoError(t, err)
	w.Start()
	defer w.Stop()
	for range 300 {
		var ran, wins atomic.Int32
		tm := w.AfterFunc(100*time.Microsecond, func() { ran.Add(1) })
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if tm.Stop() {
					wins.Add(1)
				}
			}()
		}
		wg.Wait()
		require.NoError(t, w.Sync(context.Background()))
		require.EqualValues(t, 1, ran.Load()+wins.Load(), "ran %d, wins %d", ran.Load(), wins.Load())
	}
}

// Stop racing the cascade of a large bucket (the driver holds batches of
// it) still gives exactly one outcome per timer.
func TestStopDuringCascade(t *testing.T) {
	w, mock := mockWheel(t, WithWheelSize(4))
	const n = 20000
	var ran atomic.Int64
	timers := make([]*Timer, n)
	for i := range timers {
		timers[i] = w.AfterFunc(time.Duration(20+i%40)*time.Millisecond, func() { ran.Add(1) })
	}
	var stops atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := n - 1; i >= 0; i -= 2 {
			if timers[i].Stop() {
				stops.Add(1)
			}
		}
	}()
	for range 70 {
		advance(t, w, mock, time.Millisecond)
	}
	wg.Wait()
	assert.EqualValues(t, n, ran.Load()+stops.Load())
	assert.Zero(t, w.Len())
}

func TestErrorsAreDistinct(t *testing.T) {
	assert.False(t, errors.Is(ErrStopped, ErrNotStarted))
	assert.True(t, strings.HasPrefix(ErrInvalidOption.Error(), "timingwheel:"))
}
