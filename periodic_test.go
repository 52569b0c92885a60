package timingwheel

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Periodic timers under Stop and Reset from several goroutines while they
// run every 200µs on the real clock: runs of one timer never overlap, and
// once a last Stop has returned the timer is idle, so that no further run
// starts.
func TestPeriodicStopResetStress(t *testing.T) {
	for _, name := range []string{"inline", "goroutine"} {
		t.Run(name, func(t *testing.T) {
			w := realWheel(t, name)

			const n = 16
			type series struct {
				tm               *Timer
				running, overlap atomic.Int32
			}
			all := make([]*series, n)
			for i := range all {
				s := &series{}
				s.tm = w.ScheduleFunc(Every(200*time.Microsecond), func() {
					if s.running.Add(1) > 1 {
						s.overlap.Add(1)
					}
					time.Sleep(time.Duration(i%3) * 50 * time.Microsecond)
					s.running.Add(-1)
				})
				all[i] = s
			}
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(uint64(g), 9))
					for range 2000 {
						s := all[r.IntN(n)]
						if r.IntN(2) == 0 {
							s.tm.Stop()
						} else {
							s.tm.Reset(time.Duration(r.IntN(400)) * time.Microsecond)
						}
					}
				}()
			}
			wg.Wait()
			for _, s := range all {
				s.tm.Stop()
			}
			// Runs claimed before the Stops may still be finishing. Then
			// every timer is idle: not pending, not fired, so no run of it
			// can start again.
			require.Eventually(t, func() bool {
				for _, s := range all {
					if s.running.Load() != 0 {
						return false
					}
				}
				return true
			}, 5*time.Second, time.Millisecond)
			for i, s := range all {
				assert.Equal(t, statusIdle, status(s.tm.load()), "timer %d after its last Stop", i)
				assert.Zero(t, s.overlap.Load(), "timer %d: runs overlapped", i)
			}
			assert.Zero(t, w.Len())
		})
	}
}
