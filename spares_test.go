package timingwheel

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// checkSpares checks, with the driver quiescent: no lane is mid-flush;
// no lane array holds a timer beyond len; spares are empty arrays of
// minLaneCap..maxSpareCap slots whose total is spareSlots; and no array
// is shared by two lanes, two spares, or a lane and a spare. It also
// returns how many lanes are oversized (cap > minLaneCap, len < cap/4).
func checkSpares(w *TimingWheel) (oversized int, err error) {
	owner := map[**Timer]string{}
	claim := func(a []*Timer, who string) error {
		if cap(a) == 0 {
			return nil
		}
		p := &a[:1][0]
		if o, ok := owner[p]; ok {
			return fmt.Errorf("array shared by %s and %s", o, who)
		}
		owner[p] = who
		return nil
	}
	for _, l := range allLanes(w) {
		l.mu.Lock()
		items := l.items
		l.mu.Unlock()
		who := fmt.Sprintf("lane %x", l.id)
		for i, tm := range items[len(items):cap(items)] {
			if tm != nil {
				return 0, fmt.Errorf("%s: stale timer at %d beyond len %d", who, len(items)+i, len(items))
			}
		}
		if cap(items) > minLaneCap && len(items) < cap(items)/4 {
			oversized++
		}
		if err := claim(items, who); err != nil {
			return 0, err
		}
	}
	total := 0
	for i, a := range w.spares.arrays {
		who := fmt.Sprintf("spare %d", i)
		if len(a) != 0 || cap(a) < minLaneCap || cap(a) > maxSpareCap {
			return 0, fmt.Errorf("%s: len %d cap %d", who, len(a), cap(a))
		}
		for j, tm := range a[:cap(a)] {
			if tm != nil {
				return 0, fmt.Errorf("%s: stale timer at %d", who, j)
			}
		}
		if err := claim(a, who); err != nil {
			return 0, err
		}
		total += cap(a)
	}
	if total != w.spares.slots || total > maxSpareSlots {
		return 0, fmt.Errorf("spare slots %d, counted %d", w.spares.slots, total)
	}
	return oversized, nil
}

// Timers fire, cascade and wrap while other goroutines Stop and Reset
// them (so during flushes); at quiet points the lanes and spares keep
// their invariants.
func TestSpareArraysUnderStress(t *testing.T) {
	for _, levels := range []int{2, 3, 0} {
		t.Run(fmt.Sprint("levels", levels), func(t *testing.T) {
			w, mock := mockWheel(t, WithWheelSize(8), func(c *config) { c.lanes = 2; c.levels = levels })
			var fired atomic.Int64
			timers := make([]*Timer, 6000)
			for i := range timers {
				timers[i] = w.AfterFunc(time.Duration(1+i%200)*time.Millisecond, func() { fired.Add(1) })
			}
			maxOversized, maxSpares := 0, 0
			for phase := range 40 {
				var stop atomic.Bool
				var wg sync.WaitGroup
				for g := range 2 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						r := rand.New(rand.NewPCG(uint64(phase), uint64(g)))
						for !stop.Load() {
							tm := timers[r.IntN(len(timers))]
							switch r.IntN(3) {
							case 0:
								tm.Stop()
							default:
								tm.Reset(time.Duration(r.IntN(300)) * time.Millisecond)
							}
						}
					}()
				}
				r := rand.New(rand.NewPCG(uint64(phase), 99))
				for range 10 {
					advance(t, w, mock, time.Duration(r.IntN(6))*time.Millisecond)
				}
				stop.Store(true)
				wg.Wait()
				advance(t, w, mock, 0)
				ov, err := checkSpares(w)
				if err != nil {
					t.Fatalf("phase %d: %v", phase, err)
				}
				maxOversized, maxSpares = max(maxOversized, ov), max(maxSpares, len(w.spares.arrays))
			}
			t.Logf("fired %d; most spares %d; most oversized lanes %d", fired.Load(), maxSpares, maxOversized)
		})
	}
}

// Regression: a lane outgrowing its inline slots once took whatever spare
// was on top, however big, so that after a cascade level-0 lanes with a
// handful of timers held arrays of up to maxSpareCap slots. A lane takes
// only a spare at most four times its size.
func TestSmallLanesTakeNoLargeSpare(t *testing.T) {
	w, mock := mockWheel(t, func(c *config) { c.lanes = 1 })
	// 1000 timers in one level-1 bucket, about 4 per level-0 tick once
	// they cascade.
	for i := range 1000 {
		w.AfterFunc(520*time.Millisecond+time.Duration(i)*250*time.Microsecond, func() {})
	}
	advance(t, w, mock, 300*time.Millisecond) // the level-1 bucket cascades at 256 ms
	lv0 := w.levels[0].Load()
	worst := 0
	for i := range lv0.buckets {
		l := &lv0.buckets[i].lanes[0]
		l.mu.Lock()
		if n := len(l.items); n > 0 && n <= 8 {
			worst = max(worst, cap(l.items))
		}
		l.mu.Unlock()
	}
	t.Logf("largest array held by a level-0 lane of at most 8 timers: %d slots", worst)
	if worst > 64 {
		t.Errorf("a lane of at most 8 timers holds %d slots (%d KiB)", worst, worst*8/1024)
	}
}
