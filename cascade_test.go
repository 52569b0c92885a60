package timingwheel

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// timersAt counts the timers linked in the lanes of level i.
func timersAt(w *TimingWheel, i int) int {
	lv := w.levels[i].Load()
	if lv == nil {
		return 0
	}
	n := 0
	for b := range lv.buckets {
		for k := range lv.buckets[b].lanes {
			l := &lv.buckets[b].lanes[k]
			l.mu.Lock()
			n += len(l.items)
			l.mu.Unlock()
		}
	}
	return n
}

// A large coarse bucket whose range is far ahead cascades in slices of
// about cascadeSlice timers, one per grain, and whatever is left once half
// of its lead is spent; Len stays exact throughout, and every timer fires
// at its deadline.
func TestCascadeInSlices(t *testing.T) {
	w, mock := mockWheel(t)
	start := mock.Now()
	fired := newFirings()
	// 4,000 timers in the level-1 bucket of [768ms, 1024ms), which
	// cascades from 512ms on: half its lead is spent at 640ms.
	const n = 4000
	for i := range n {
		w.AfterFunc(768*time.Millisecond+time.Duration(i)*63*time.Microsecond, fired.task(mock, i))
	}
	require.Equal(t, n, timersAt(w, 1))

	advance(t, w, mock, 512*time.Millisecond)
	moved := timersAt(w, 0)
	assert.GreaterOrEqual(t, moved, cascadeSlice, "a slice moves at least cascadeSlice timers")
	assert.LessOrEqual(t, moved, cascadeSlice+flushBatch, "a slice stops after the batch that spends its budget")
	assert.Equal(t, n, w.Len())

	// The next look is a grain later, and moves another slice.
	advance(t, w, mock, time.Duration(w.grainOf(1)/2))
	assert.Equal(t, moved, timersAt(w, 0), "no look before the next grain")
	advance(t, w, mock, time.Duration(w.grainOf(1)/2))
	assert.Greater(t, timersAt(w, 0), moved)
	assert.Equal(t, n, w.Len())

	// Once half the lead is spent, the rest moves in one look: the first
	// look at 640ms or later (a slow look that began before may have
	// armed the next one a grain after it).
	advance(t, w, mock, 640*time.Millisecond-mock.Now().Sub(start))
	advance(t, w, mock, time.Duration(w.grainOf(1)))
	assert.Equal(t, n, timersAt(w, 0))
	assert.Zero(t, timersAt(w, 1))
	assert.Equal(t, n, w.Len())

	for range 400 {
		advance(t, w, mock, time.Millisecond)
	}
	assert.Zero(t, w.Len())
	for i := range n {
		at := fired.times(i)
		require.Len(t, at, 1, "timer %d", i)
		due := 768*time.Millisecond + time.Duration(i)*63*time.Microsecond
		assert.GreaterOrEqual(t, at[0].Sub(start), due, "timer %d early", i)
		assert.LessOrEqual(t, at[0].Sub(start), due+time.Millisecond, "timer %d late", i)
	}
}

// A small coarse bucket, or one whose range starts within half a tick of
// its level, moves whole in one look, as it always did.
func TestCascadeBudget(t *testing.T) {
	w, _ := mockWheel(t)
	w.AfterFunc(time.Second, func() {}) // creates levels 0 and 1
	lv := w.level(1)
	tick := w.tick
	// The bucket of [768ms, 1024ms) is slot 3 of level 1.
	b := &lv.buckets[3]
	assert.Equal(t, cascadeSlice, w.cascadeBudget(b, 512*int64(time.Millisecond)))
	assert.Equal(t, cascadeSlice, w.cascadeBudget(b, 639*int64(time.Millisecond)))
	assert.Greater(t, w.cascadeBudget(b, 640*int64(time.Millisecond)), 1<<40, "half the lead spent")
	assert.Greater(t, w.cascadeBudget(b, 700*int64(time.Millisecond)), 1<<40)
	// At 512ms slot 3 is the range cascading; any other slot is not, and
	// moves whole.
	assert.Greater(t, w.cascadeBudget(&lv.buckets[4], 512*tick), 1<<40)
	// Level-0 and due buckets fire whole.
	assert.Greater(t, w.cascadeBudget(&w.level(0).buckets[3], 0), 1<<40)
	assert.Greater(t, w.cascadeBudget(&w.due, 0), 1<<40)
}
