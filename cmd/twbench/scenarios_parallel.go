package main

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// init registers the parallel scenario.
func init() {
	register(scenario{
		name:   "parallel",
		order:  50,
		help:   "-g goroutines doing AfterFunc(1s)+Stop for -for with -pending timers pending: ops/s with 1 and -g goroutines",
		timers: func(o *options) int { return o.pending },
		run:    runParallel,
	})
}

// parallelResult is one engine's throughput with one goroutine and with
// -g goroutines.
type parallelResult struct {
	one, many float64 // ops/s
}

// runParallel preloads -pending timers in each engine and measures the
// throughput of AfterFunc(1s)+Stop pairs from one goroutine and then from
// -g goroutines, each for -for.
func runParallel(e *env) ([]row, error) {
	n, g := e.opts.pending, e.opts.goroutines
	label := "N=" + formatCount(n)

	w, _, err := e.preloadWheel("parallel: preloading wheel, "+label, n, false)
	if err != nil {
		return nil, err
	}
	runtime.GC()
	wheelOp := func() { w.AfterFunc(time.Second, nop).Stop() }
	wr := parallelResult{one: opsPerSec(1, e.opts.parallelFor, wheelOp), many: opsPerSec(g, e.opts.parallelFor, wheelOp)}
	w.Stop()
	release()

	timers := e.preloadRuntime("parallel: preloading runtime, "+label, n)
	runtime.GC()
	runtimeOp := func() { time.AfterFunc(time.Second, nop).Stop() }
	rr := parallelResult{one: opsPerSec(1, e.opts.parallelFor, runtimeOp), many: opsPerSec(g, e.opts.parallelFor, runtimeOp)}
	stopRuntime(timers)
	release()

	return []row{
		both("start+stop, 1 goroutine, "+label, unitOpsSec, wr.one, rr.one),
		both(fmt.Sprintf("start+stop, %d goroutines, %s", g, label), unitOpsSec, wr.many, rr.many),
		both(fmt.Sprintf("scaling %d vs 1 goroutines", g), unitTimes, wr.many/wr.one, rr.many/rr.one),
	}, nil
}

// opsPerSec runs op in a loop on g goroutines for about d and returns the
// total operations per second of wall time.
func opsPerSec(g int, d time.Duration, op func()) float64 {
	// Check the stop flag every batch ops, so that it costs nothing.
	const batch = 64
	var stop atomic.Bool
	var total atomic.Int64
	var ready, done sync.WaitGroup
	startGate := make(chan struct{})
	ready.Add(g)
	done.Add(g)
	for range g {
		go func() {
			defer done.Done()
			ready.Done()
			<-startGate
			n := 0
			for !stop.Load() {
				for range batch {
					op()
				}
				n += batch
			}
			total.Add(int64(n))
		}()
	}
	ready.Wait()
	start := time.Now()
	close(startGate)
	time.Sleep(d)
	stop.Store(true)
	done.Wait()
	return float64(total.Load()) / time.Since(start).Seconds()
}
