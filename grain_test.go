package timingwheel

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tests of level-0 firing: a timer fires at the end of the grain (an
// quarter of a tick) its deadline falls in, never before its deadline, and
// not at the end of its tick.

// grain is the grain of a wheel with the default tick.
const grain = 250 * time.Microsecond // a quarter of the default 1 ms tick

// roundUpGrain returns d rounded up to a grain.
func roundUpGrain(d time.Duration) time.Duration {
	return (d + grain - 1) / grain * grain
}

// fireLog records, for each timer, the mock time since start at which it
// fired, and the order of firings.
type fireLog struct {
	mu    sync.Mutex
	at    map[int]time.Duration
	order []int
}

func (l *fireLog) task(mock *clock.Mock, start time.Time, i int) func() {
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.at[i] = mock.Since(start)
		l.order = append(l.order, i)
	}
}

// stepTo advances the mock clock in steps of step, with a Sync after each,
// until it is at start+until.
func stepTo(t *testing.T, w *TimingWheel, mock *clock.Mock, start time.Time, until, step time.Duration) {
	t.Helper()
	for mock.Since(start) < until {
		advance(t, w, mock, min(step, until-mock.Since(start)))
	}
}

func TestLevel0TimersFireAtTheirGrainNotTheTickEnd(t *testing.T) {
	w, mock := mockWheel(t)
	start := mock.Now()
	// All in the first and second ticks, at grain boundaries and between.
	ds := []time.Duration{
		130 * time.Microsecond, 250 * time.Microsecond, 251 * time.Microsecond,
		600 * time.Microsecond, 999 * time.Microsecond, time.Millisecond,
		1001 * time.Microsecond, 1400 * time.Microsecond,
	}
	log := &fireLog{at: map[int]time.Duration{}}
	for i, d := range ds {
		w.AfterFunc(d, log.task(mock, start, i))
	}
	// Steps of 5µs land on every grain boundary.
	stepTo(t, w, mock, start, 3*time.Millisecond, 5*time.Microsecond)
	require.Len(t, log.at, len(ds))
	for i, d := range ds {
		assert.GreaterOrEqual(t, log.at[i], d, "timer %d (due %v) fired early", i, d)
		assert.Equal(t, roundUpGrain(d), log.at[i], "timer %d (due %v)", i, d)
	}
}

// Timers scheduled in random order, straight into level 0 or cascaded
// there from level 1, fire in the order of their grains, each at
// its own grain and never before its deadline.
func TestLevel0FiringOrderFollowsDeadlines(t *testing.T) {
	w, mock := mockWheel(t)
	start := mock.Now()
	r := rand.New(rand.NewPCG(7, 8))
	const n = 400
	ds := make([]time.Duration, n)
	log := &fireLog{at: map[int]time.Duration{}}
	for i := range ds {
		if i%2 == 0 {
			// Level 1 first (beyond the 512 ms of level 0), then cascaded.
			ds[i] = 600*time.Millisecond + time.Duration(r.Int64N(int64(20*time.Millisecond)))
		} else {
			ds[i] = time.Duration(r.Int64N(int64(20 * time.Millisecond)))
		}
		w.AfterFunc(ds[i], log.task(mock, start, i))
	}
	stepTo(t, w, mock, start, 21*time.Millisecond, 25*time.Microsecond)
	// Before any of the others is due; their level-1 bucket cascades on
	// the way.
	advance(t, w, mock, 578*time.Millisecond)
	stepTo(t, w, mock, start, 621*time.Millisecond, 25*time.Microsecond)

	require.Len(t, log.order, n)
	for i, d := range ds {
		assert.GreaterOrEqual(t, log.at[i], d, "timer %d fired early", i)
		assert.Equal(t, roundUpGrain(d), log.at[i], "timer %d (due %v)", i, d)
	}
	for k := 1; k < n; k++ {
		prev, cur := log.order[k-1], log.order[k]
		assert.LessOrEqual(t, roundUpGrain(ds[prev]), roundUpGrain(ds[cur]),
			"timer %d (due %v) fired after timer %d (due %v)", prev, ds[prev], cur, ds[cur])
	}
}

// A timer left in its bucket by an earlier firing of the bucket is still
// pending: Stop takes it out, and Reset moves it.
func TestTimersLeftInABucketStopAndReset(t *testing.T) {
	w, mock := mockWheel(t)
	start := mock.Now()
	log := &fireLog{at: map[int]time.Duration{}}
	w.AfterFunc(300*time.Microsecond, log.task(mock, start, 0))
	b := w.AfterFunc(800*time.Microsecond, log.task(mock, start, 1))
	c := w.AfterFunc(900*time.Microsecond, log.task(mock, start, 2))

	stepTo(t, w, mock, start, 500*time.Microsecond, 25*time.Microsecond)
	require.Equal(t, []int{0}, log.order)
	assert.Equal(t, 2, w.Len())
	assert.True(t, b.Stop())
	assert.True(t, c.Reset(2*time.Millisecond)) // due at 2.5 ms
	stepTo(t, w, mock, start, 3*time.Millisecond, 25*time.Microsecond)
	assert.Equal(t, []int{0, 2}, log.order)
	assert.Equal(t, 2500*time.Microsecond, log.at[2])
	assert.False(t, b.Stop())
	assert.Zero(t, w.Len())
}

// One lane holding many more timers than a flush takes per lock, due
// across a tick: each grain's firing looks past the timers not due yet,
// however many, and fires each timer once, at its grain.
func TestLargeLaneFiresGrainByGrain(t *testing.T) {
	w, mock := mockWheel(t, func(c *config) { c.lanes = 1 })
	start := mock.Now()
	const n = 4 * flushBatch
	log := &fireLog{at: map[int]time.Duration{}}
	ds := make([]time.Duration, n)
	r := rand.New(rand.NewPCG(1, 9))
	for i := range ds {
		ds[i] = 2*time.Millisecond + time.Duration(r.Int64N(int64(time.Millisecond)))
		w.AfterFunc(ds[i], log.task(mock, start, i))
	}
	advance(t, w, mock, 2*time.Millisecond)
	for g := range grainsPerTick {
		advance(t, w, mock, grain)
		now := mock.Since(start)
		log.mu.Lock()
		for i, d := range ds {
			_, fired := log.at[i]
			require.Equal(t, d <= now, fired, "grain %d: timer %d due %v, now %v", g, i, d, now)
		}
		log.mu.Unlock()
	}
	require.Len(t, log.order, n, "each timer fired once")
}

// Stop racing the firing of the timers of one bucket, grain by grain: for every timer exactly one of "it fired" and "a Stop returned
// true" happens.
func TestStopRacesGrainFiring(t *testing.T) {
	for round := range 20 {
		w, mock := mockWheel(t, func(c *config) { c.lanes = 2 })
		start := mock.Now()
		const n = 600
		fired := make([]atomic.Int32, n)
		timers := make([]*Timer, n)
		r := rand.New(rand.NewPCG(uint64(round), 3))
		for i := range timers {
			d := time.Millisecond + time.Duration(r.Int64N(int64(time.Millisecond)))
			timers[i] = w.AfterFunc(d, func() { fired[i].Add(1) })
		}
		stopped := make([]bool, n)
		var wg sync.WaitGroup
		for g := range 3 {
			wg.Go(func() {
				for i := g; i < n; i += 3 {
					stopped[i] = timers[i].Stop()
				}
			})
		}
		stepTo(t, w, mock, start, 3*time.Millisecond, grain/2)
		wg.Wait()
		advance(t, w, mock, 2*time.Millisecond)
		for i := range n {
			f := fired[i].Load()
			require.LessOrEqual(t, f, int32(1), "timer %d fired twice", i)
			require.True(t, (f == 1) != stopped[i], "timer %d: fired %d, Stop returned %v", i, f, stopped[i])
		}
		require.Zero(t, w.Len())
		w.Stop()
	}
}
