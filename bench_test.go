package timingwheel

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed64e23a5c/timingwheel/internal/cputime"
)

// The benchmarks compare the wheel with Go's runtime timers (time.AfterFunc)
// side by side in one run. Run them alone on a quiet machine, for example:
//
//	go test -run '^$' -bench . -benchtime 2000000x -timeout 30m
//
// Each preloads its pending timers once per size, outside the timed loop.

var pendingSizes = []int{1_000_000, 5_000_000, 10_000_000}

func nop() {}

// spreadDeadline returns a deadline in [1h, 2h), so that no preloaded timer
// fires while a benchmark runs.
func spreadDeadline(r *rand.Rand) time.Duration {
	return time.Hour + time.Duration(r.Int64N(int64(time.Hour)))
}

// engine is one timer implementation under benchmark.
type engine struct {
	name    string
	preload func(n int) (stopAll func())
	// startStop schedules f after d and stops it, n times.
	startStop func(n int, d time.Duration, f func())
	pending   func() int
}

func engines(b *testing.B) []engine {
	var w *TimingWheel
	var rtCount atomic.Int64
	return []engine{
		{
			name: "wheel",
			preload: func(n int) func() {
				w, _ = New()
				w.Start()
				r := rand.New(rand.NewPCG(1, 2))
				for range n {
					w.AfterFunc(spreadDeadline(r), nop)
				}
				return w.Stop
			},
			startStop: func(n int, d time.Duration, f func()) {
				for range n {
					w.AfterFunc(d, f).Stop()
				}
			},
			pending: func() int { return w.Len() },
		},
		{
			name: "runtime",
			preload: func(n int) func() {
				r := rand.New(rand.NewPCG(1, 2))
				timers := make([]*time.Timer, n)
				for i := range timers {
					timers[i] = time.AfterFunc(spreadDeadline(r), nop)
				}
				rtCount.Store(int64(n))
				return func() {
					for _, t := range timers {
						t.Stop()
					}
				}
			},
			startStop: func(n int, d time.Duration, f func()) {
				for range n {
					time.AfterFunc(d, f).Stop()
				}
			},
			pending: func() int { return int(rtCount.Load()) },
		},
	}
}

// BenchmarkAfterFuncStop measures AfterFunc(1s)+Stop with N timers pending.
func BenchmarkAfterFuncStop(b *testing.B) {
	for _, n := range pendingSizes {
		for _, e := range engines(b) {
			b.Run(fmt.Sprintf("pending=%dM/%s", n/1_000_000, e.name), func(b *testing.B) {
				stopAll := e.preload(n)
				defer stopAll()
				runtime.GC()
				before := e.pending()
				b.ReportAllocs()
				b.ResetTimer()
				e.startStop(b.N, time.Second, nop)
				b.StopTimer()
				b.ReportMetric(float64(before), "pending-start")
				b.ReportMetric(float64(e.pending()), "pending-end")
			})
		}
	}
}

// floorTimer is shaped like a Timer: 48 bytes, with the same pointers.
type floorTimer struct {
	_    uint64 // state
	when int64
	_    <-chan time.Time // C
	f    func()
	w    *TimingWheel
	_    uint32 // pos
}

var floorSink *floorTimer

// BenchmarkAfterFuncFloor measures what any AfterFunc(d)+Stop that returns
// a new timer costs before it keeps the timer anywhere: one clock read and
// one 48-byte allocation, with N such timers live for the garbage
// collector to trace, as N pending timers are. The engine's figures in
// BenchmarkAfterFuncStop sit above this floor; the runtime's time.AfterFunc
// pays the same two costs, with 112 bytes.
func BenchmarkAfterFuncFloor(b *testing.B) {
	w := new(TimingWheel)
	start := time.Now()
	for _, n := range append([]int{0}, pendingSizes...) {
		b.Run(fmt.Sprintf("live=%dM", n/1_000_000), func(b *testing.B) {
			live := make([]*floorTimer, n)
			for i := range live {
				live[i] = &floorTimer{f: nop, w: w}
			}
			runtime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				t := &floorTimer{f: nop, w: w}
				t.when = int64(time.Since(start) + time.Second)
				floorSink = t
			}
			b.StopTimer()
			runtime.KeepAlive(live)
		})
	}
}

// parallelGoroutines is how many goroutines BenchmarkAfterFuncStopParallel
// runs: more goroutines than cores, as in a busy service.
const parallelGoroutines = 8

// BenchmarkAfterFuncStopParallel measures AfterFunc(1s)+Stop from 8
// goroutines with 1M timers pending.
func BenchmarkAfterFuncStopParallel(b *testing.B) {
	for _, e := range engines(b) {
		b.Run(e.name, func(b *testing.B) {
			stopAll := e.preload(1_000_000)
			defer stopAll()
			runtime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			// Each goroutine takes an equal share of b.N up front, rather
			// than calling testing.PB.Next per op: the PB structs of
			// neighbouring goroutines share cache lines, and their
			// counters would be the most contended memory in the run.
			var wg sync.WaitGroup
			for g := range parallelGoroutines {
				n := b.N / parallelGoroutines
				if g < b.N%parallelGoroutines {
					n++
				}
				wg.Go(func() { e.startStop(n, time.Second, nop) })
			}
			wg.Wait()
		})
	}
}

// BenchmarkFire comes before the benchmarks that stop a million runtime
// timers: those stay in the runtime's timer heaps for a while and slow the
// scheduler. It schedules 1M timers due across a 2s window and reports
// lateness percentiles, early firings and the wall time from the window's
// start until all fired. The window starts after a lead long enough to
// schedule every timer, so that none is due before it is scheduled. The
// process CPU time is from the first schedule to the last firing.
func BenchmarkFire(b *testing.B) {
	const n, window = 1_000_000, 2 * time.Second
	inline := func(task func()) { task() }
	run := func(b *testing.B, schedule func(d time.Duration, f func())) {
		for range b.N {
			late := make([]time.Duration, n)
			var early, fired atomic.Int64
			var wg sync.WaitGroup
			wg.Add(n)
			r := rand.New(rand.NewPCG(3, 4))
			cpu0, _ := cputime.Process()
			start := time.Now().Add(100*time.Millisecond + n*time.Microsecond)
			for i := range n {
				d := time.Duration(r.Int64N(int64(window)))
				due := start.Add(d)
				schedule(time.Until(due), func() {
					l := time.Since(due)
					if l < 0 {
						early.Add(1)
					}
					late[i] = l
					fired.Add(1)
					wg.Done()
				})
			}
			wg.Wait()
			b.ReportMetric(time.Since(start).Seconds(), "s-all-fired")
			if cpu1, ok := cputime.Process(); ok {
				b.ReportMetric((cpu1 - cpu0).Seconds(), "cpu-s")
			}
			slices.Sort(late)
			b.ReportMetric(float64(late[n/2])/1e6, "p50-ms")
			b.ReportMetric(float64(late[n*99/100])/1e6, "p99-ms")
			b.ReportMetric(float64(late[n-1])/1e6, "max-ms")
			b.ReportMetric(float64(early.Load()), "early")
		}
	}
	b.Run("wheel-inline", func(b *testing.B) {
		w, _ := New(WithExecutor(inline))
		w.Start()
		defer w.Stop()
		run(b, func(d time.Duration, f func()) { w.AfterFunc(d, f) })
	})
	b.Run("wheel-goroutine", func(b *testing.B) {
		w, _ := New()
		w.Start()
		defer w.Stop()
		run(b, func(d time.Duration, f func()) { w.AfterFunc(d, f) })
	})
	b.Run("runtime", func(b *testing.B) {
		run(b, func(d time.Duration, f func()) { time.AfterFunc(d, f) })
	})
}

// BenchmarkMemoryPerTimer reports heap bytes per pending timer, for 1M
// timers sharing one func, with their handles kept alive. Each iteration
// measures afresh: run it with -benchtime 1x.
func BenchmarkMemoryPerTimer(b *testing.B) {
	const n = 1_000_000
	b.Run("wheel", func(b *testing.B) {
		for range b.N {
			base0 := heapInUse()
			w, _ := New()
			r := rand.New(rand.NewPCG(1, 2))
			base := heapInUse()
			timers := make([]*Timer, n)
			sliceBytes := heapInUse() - base
			for i := range timers {
				timers[i] = w.AfterFunc(spreadDeadline(r), nop)
			}
			b.ReportMetric((heapInUse()-base-sliceBytes)/n, "B/timer")
			b.ReportMetric((base-base0)/1024, "KiB/empty-wheel")
			runtime.KeepAlive(timers)
			w.Stop()
		}
	})
	b.Run("runtime", func(b *testing.B) {
		for range b.N {
			r := rand.New(rand.NewPCG(1, 2))
			base := heapInUse()
			timers := make([]*time.Timer, n)
			sliceBytes := heapInUse() - base
			for i := range timers {
				timers[i] = time.AfterFunc(spreadDeadline(r), nop)
			}
			b.ReportMetric((heapInUse()-base-sliceBytes)/n, "B/timer")
			for _, t := range timers {
				t.Stop()
			}
		}
	})
}

func heapInUse() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapInuse)
}

// BenchmarkIdle reports the CPU the process uses over 5s with 1M timers
// due in an hour.
func BenchmarkIdle(b *testing.B) {
	const n = 1_000_000
	measure := func(b *testing.B, preload func() func()) {
		for range b.N {
			stop := preload()
			// Settle the collector and the scavenger left busy by earlier
			// benchmarks, so that only the idle engine is measured.
			debug.FreeOSMemory()
			before, ok := cputime.Process()
			if !ok {
				b.Skip("no process CPU time on this system")
			}
			time.Sleep(5 * time.Second)
			after, _ := cputime.Process()
			b.ReportMetric(float64(after-before)/1e6, "cpu-ms/5s")
			stop()
		}
	}
	b.Run("wheel", func(b *testing.B) {
		measure(b, func() func() {
			w, _ := New()
			w.Start()
			r := rand.New(rand.NewPCG(1, 2))
			for range n {
				w.AfterFunc(spreadDeadline(r), nop)
			}
			return w.Stop
		})
	})
	b.Run("runtime", func(b *testing.B) {
		measure(b, func() func() {
			r := rand.New(rand.NewPCG(1, 2))
			timers := make([]*time.Timer, n)
			for i := range timers {
				timers[i] = time.AfterFunc(spreadDeadline(r), nop)
			}
			return func() {
				for _, t := range timers {
					t.Stop()
				}
			}
		})
	})
}
