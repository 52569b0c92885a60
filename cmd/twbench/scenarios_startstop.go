package main

import (
	"fmt"
	"runtime"
	"slices"
	"time"
)

// init registers the startstop scenario.
func init() {
	register(scenario{
		name:  "startstop",
		order: 10,
		help:  "AfterFunc(1s)+Stop pairs with N timers pending (-n, -ops): ns/op (median of 5 parts), allocs/op, B/op",
		timers: func(o *options) int {
			return slices.Max(o.ns)
		},
		run: runStartStop,
	})
}

// startStopResult is one engine's measurement at one N.
type startStopResult struct {
	nsOp, allocsOp, bytesOp  float64
	pendingStart, pendingEnd int
	// failed counts the Stop calls that returned false: timers of 1s that
	// fired before being stopped, which should not happen.
	failed int
}

// runStartStop measures AfterFunc(1s)+Stop pairs with each N of -n
// pending, the wheel and then the runtime, freeing each engine's preload
// before the next.
func runStartStop(e *env) ([]row, error) {
	var rows []row
	for _, n := range e.opts.ns {
		label := "N=" + formatCount(n)
		wr, err := startStopWheel(e, n)
		if err != nil {
			return nil, err
		}
		release()
		rr := startStopRuntime(e, n)
		release()
		for _, r := range []struct {
			engine string
			res    startStopResult
		}{{"wheel", wr}, {"runtime", rr}} {
			if r.res.failed > 0 {
				fmt.Fprintf(e.stderr, "twbench: startstop %s %s: %d of %d Stop calls returned false (the 1s timer had fired)\n",
					label, r.engine, r.res.failed, e.opts.ops)
			}
		}
		e.startstop = append(e.startstop, startstopPoint{n: n, wheelNs: wr.nsOp, runtime: rr.nsOp})
		rows = append(rows,
			both("start+stop "+label, unitNsOp, wr.nsOp, rr.nsOp),
			both("allocs "+label, unitAllocsOp, wr.allocsOp, rr.allocsOp),
			both("bytes "+label, unitBytesOp, wr.bytesOp, rr.bytesOp),
			both("pending at start "+label, unitTimers, float64(wr.pendingStart), float64(rr.pendingStart)),
			both("pending at end "+label, unitTimers, float64(wr.pendingEnd), float64(rr.pendingEnd)),
		)
	}
	return rows, nil
}

// startStopWheel preloads a wheel with n timers and times -ops pairs.
// Pending counts come from the wheel's Len.
func startStopWheel(e *env, n int) (startStopResult, error) {
	w, _, err := e.preloadWheel(fmt.Sprintf("startstop: preloading wheel, N=%s", formatCount(n)), n, false)
	if err != nil {
		return startStopResult{}, err
	}
	defer w.Stop()
	runtime.GC()
	var res startStopResult
	res.pendingStart = w.Len()
	ops := e.opts.ops
	res.nsOp, res.allocsOp, res.bytesOp = measureOps(ops, func(n int) {
		for range n {
			if !w.AfterFunc(time.Second, nop).Stop() {
				res.failed++
			}
		}
	})
	res.pendingEnd = w.Len()
	return res, nil
}

// startStopRuntime preloads n runtime timers and times -ops pairs. The
// runtime has no Len: the pending count at the start is the n scheduled,
// and at the end the number of preloaded timers whose Stop returns true.
func startStopRuntime(e *env, n int) startStopResult {
	timers := e.preloadRuntime(fmt.Sprintf("startstop: preloading runtime, N=%s", formatCount(n)), n)
	runtime.GC()
	res := startStopResult{pendingStart: n}
	ops := e.opts.ops
	res.nsOp, res.allocsOp, res.bytesOp = measureOps(ops, func(n int) {
		for range n {
			if !time.AfterFunc(time.Second, nop).Stop() {
				res.failed++
			}
		}
	})
	res.pendingEnd = stopRuntime(timers)
	return res
}

// measureChunks is how many parts measureOps times separately.
const measureChunks = 5

// measureOps runs ops operations with loop(n), which does n of them, in
// measureChunks parts timed separately. It returns the median part's time
// per operation, which a burst of other work on a shared machine does not
// move, and the allocations and bytes allocated per operation over all
// parts, from runtime.MemStats deltas (Mallocs, TotalAlloc).
func measureOps(ops int, loop func(n int)) (nsOp, allocsOp, bytesOp float64) {
	perOp := make([]float64, 0, measureChunks)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range measureChunks {
		n := ops*(i+1)/measureChunks - ops*i/measureChunks
		if n == 0 {
			continue
		}
		start := time.Now()
		loop(n)
		perOp = append(perOp, float64(time.Since(start).Nanoseconds())/float64(n))
	}
	runtime.ReadMemStats(&after)
	total := float64(ops)
	return median(perOp),
		float64(after.Mallocs-before.Mallocs) / total,
		float64(after.TotalAlloc-before.TotalAlloc) / total
}
