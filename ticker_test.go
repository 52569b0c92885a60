package timingwheel

import (
	"runtime"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Ticker keeps its cadence: each tick is scheduled a period after the
// previous tick's scheduled time, whatever the steps the clock takes, and
// the ticks missed while nobody read are dropped, C holding the first.
func TestTickerKeepsItsCadenceAndDropsTicks(t *testing.T) {
	w, mock := mockWheel(t)
	start := mock.Now()
	tk := w.NewTicker(5 * time.Millisecond)
	next := func() time.Duration { return time.Duration(tk.core.when) }
	require.Equal(t, 5*time.Millisecond, next())
	assert.Equal(t, 1, w.Len(), "a running Ticker counts in Len")

	advance(t, w, mock, 7*time.Millisecond) // the tick of 5ms
	require.Len(t, tk.C, 1)
	sent := (<-tk.C).Sub(start) // the clock's time when the driver fired it
	assert.True(t, sent >= 5*time.Millisecond && sent <= 7*time.Millisecond, "sent at %v", sent)
	assert.Equal(t, 10*time.Millisecond, next(), "5ms after the tick's scheduled time, not after the 7ms it was sent at")

	advance(t, w, mock, 7*time.Millisecond) // 14ms: the tick of 10ms
	<-tk.C
	assert.Equal(t, 15*time.Millisecond, next())

	// Nobody reads for 4 periods: C keeps the first tick, the driver drops
	// the others, and the cadence goes on from where the clock is.
	for range 4 {
		advance(t, w, mock, 5*time.Millisecond)
	}
	require.Len(t, tk.C, 1)
	sent = (<-tk.C).Sub(start)
	assert.True(t, sent >= 15*time.Millisecond && sent < 20*time.Millisecond, "the first tick missed, sent at %v", sent)
	assert.Empty(t, tk.C)
	assert.Equal(t, 35*time.Millisecond, next())

	tk.Stop()
	assert.Zero(t, w.Len())
	advance(t, w, mock, time.Second)
	assert.Empty(t, tk.C, "no tick after Stop")
}

// Reset drops a tick left in C, sets the period, and restarts a stopped
// Ticker; Stop drops a tick left in C.
func TestTickerResetAndStopLeaveNoTick(t *testing.T) {
	w, mock := mockWheel(t)
	tk := w.NewTicker(time.Millisecond)
	advance(t, w, mock, time.Millisecond)
	require.Len(t, tk.C, 1)
	tk.Reset(10 * time.Millisecond)
	assert.Empty(t, tk.C, "Reset drops the tick left")
	advance(t, w, mock, 9*time.Millisecond)
	assert.Empty(t, tk.C)
	advance(t, w, mock, time.Millisecond)
	assert.Len(t, tk.C, 1, "the new period")
	tk.Stop()
	assert.Empty(t, tk.C, "Stop drops the tick left")
	tk.Stop()
	advance(t, w, mock, time.Second)
	assert.Empty(t, tk.C)
	assert.Zero(t, w.Len())

	tk.Reset(2 * time.Millisecond) // a stopped Ticker starts again
	assert.Equal(t, 1, w.Len())
	for range 3 {
		advance(t, w, mock, 2*time.Millisecond)
		assert.Len(t, tk.C, 1)
		<-tk.C
	}
}

// A Ticker made before Start ticks once the wheel runs; one on a stopped
// wheel never ticks, and Stop and Reset on it keep working.
func TestTickerBeforeStartAndAfterStop(t *testing.T) {
	mock := clock.NewMock()
	w, err := New(WithClock(mock), WithExecutor(inline))
	require.NoError(t, err)
	tk := w.NewTicker(time.Millisecond)
	assert.Equal(t, 1, w.Len())
	w.Start()
	advance(t, w, mock, time.Millisecond)
	assert.Len(t, tk.C, 1)
	<-tk.C
	w.Stop()
	mock.Add(time.Second)
	assert.Empty(t, tk.C)
	tk.Reset(time.Millisecond)
	assert.Equal(t, 1, w.Len())
	tk.Stop()
	assert.Zero(t, w.Len())
}

// NewTicker and Reset panic on d <= 0 with time's messages, and Reset
// panics on a Ticker not made by NewTicker, whose Stop does nothing.
func TestTickerPanics(t *testing.T) {
	w, _ := mockWheel(t)
	assert.PanicsWithValue(t, "timingwheel: non-positive interval for NewTicker", func() { w.NewTicker(0) })
	tk := w.NewTicker(time.Second)
	assert.PanicsWithValue(t, "timingwheel: non-positive interval for Ticker.Reset", func() { tk.Reset(-1) })
	var zero Ticker
	assert.NotPanics(t, zero.Stop)
	assert.PanicsWithValue(t, "timingwheel: Reset called on uninitialized Ticker", func() { zero.Reset(time.Second) })
}

// Tickers the program no longer references are garbage-collected, and
// stop, while running, as channel timers are.
func TestUnreferencedTickersAreCollected(t *testing.T) {
	const n = 20000
	w, mock := mockWheel(t)
	runtime.GC()
	before := heapAlloc()
	for i := range n {
		tk := w.NewTicker(time.Duration(1+i%3) * time.Millisecond)
		if i%2 == 0 {
			tk.Stop()
			tk.Reset(time.Millisecond)
		}
	}
	advance(t, w, mock, 3*time.Millisecond) // running: they ticked, and were linked again
	require.Eventually(t, func() bool {
		runtime.GC()
		return w.Len() == 0
	}, 10*time.Second, 10*time.Millisecond)
	runtime.GC()
	retained := heapAlloc() - before
	assert.Less(t, retained, int64(n*48), "%d bytes kept for %d abandoned tickers", retained, n)
}

// A tick allocates nothing: the driver sends and links the core again.
func TestTickerTicksWithoutAllocating(t *testing.T) {
	const n = 20000
	w, mock := mockWheel(t)
	tickers := make([]*Ticker, n)
	for i := range tickers {
		tickers[i] = w.NewTicker(time.Millisecond)
	}
	tick := func() {
		advance(t, w, mock, time.Millisecond)
		for _, tk := range tickers {
			<-tk.C
		}
	}
	tick() // the lanes grow to hold them
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	tick()
	runtime.ReadMemStats(&after)
	assert.Less(t, float64(after.Mallocs-before.Mallocs)/n, 0.05, "allocations per tick")
}

// Stop and Reset racing the driver on the real clock: once Stop returns
// no tick is received, and once Reset to an hour returns none either.
func TestTickerNoStaleTickUnderRaces(t *testing.T) {
	w := realWheel(t, "goroutine")
	tk := w.NewTicker(time.Nanosecond) // ticks every grain
	for i := range 300 {
		time.Sleep(time.Duration(i%7) * 50 * time.Microsecond)
		if i%2 == 0 {
			tk.Stop()
		} else {
			tk.Reset(time.Hour)
		}
		time.Sleep(300 * time.Microsecond) // more than a grain
		select {
		case <-tk.C:
			t.Fatalf("round %d: a tick after %s returned", i, map[bool]string{true: "Stop", false: "Reset"}[i%2 == 0])
		default:
		}
		tk.Reset(time.Nanosecond)
	}
	tk.Stop()
}
