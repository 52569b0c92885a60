package timingwheel

import (
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// levelSpan returns how many ticks ahead level i of w can hold a timer.
func levelSpan(w *TimingWheel, i int) float64 {
	return float64(w.size) * math.Pow(2, float64(i)*float64(w.sizeShift-1))
}

// Promise 7: the default wheel has six levels, and six are what it takes
// to cover every int64 deadline in nanoseconds.
func TestDefaultWheelHasSixLevels(t *testing.T) {
	w, err := New()
	require.NoError(t, err)
	assert.Equal(t, 6, w.numLevels)
	maxTicks := float64(math.MaxInt64) / float64(w.tick)
	assert.GreaterOrEqual(t, levelSpan(w, 5), maxTicks)
	assert.Less(t, levelSpan(w, 4), maxTicks)
}

// Promise 7: New allocates no level, not even level 0; the first timer
// allocates level 0 alone, whose size the doc of New states. Measured at
// GOMAXPROCS=16, where level 0 takes 2 MiB.
// TotalAlloc counts what any goroutine allocates meanwhile, which only
// adds: each figure is the least of three tries.
func TestLevelsAreAllocatedLazily(t *testing.T) {
	for _, c := range []struct {
		procs  int
		level0 float64
	}{{2, 256 << 10}, {16, 2 << 20}} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", c.procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(c.procs))
			newBytes, level0 := uint64(math.MaxUint64), uint64(math.MaxUint64)
			for range 3 {
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				w, err := New()
				runtime.ReadMemStats(&after)
				require.NoError(t, err)
				newBytes = min(newBytes, after.TotalAlloc-before.TotalAlloc)
				for i := range w.levels {
					assert.Nil(t, w.levels[i].Load(), "level %d allocated by New", i)
				}

				runtime.ReadMemStats(&before)
				tm := w.AfterFunc(time.Millisecond, func() {})
				runtime.ReadMemStats(&after)
				require.NotNil(t, w.levels[0].Load())
				assert.Nil(t, w.levels[1].Load())
				level0 = min(level0, after.TotalAlloc-before.TotalAlloc)
				assert.True(t, tm.Stop())
				w.Stop()
			}
			assert.Less(t, newBytes, uint64(64<<10), "New allocated more than 64 KiB")
			assert.InDelta(t, c.level0, float64(level0), 32<<10, "level 0 at GOMAXPROCS=%d", c.procs)
		})
	}
}

// A lane fills one 64-byte cache line (see lane.inline).
func TestLaneIs64Bytes(t *testing.T) {
	assert.EqualValues(t, 64, unsafe.Sizeof(lane{}))
}
