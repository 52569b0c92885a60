package main

import (
	"runtime"
)

// init registers the memory scenario.
func init() {
	register(scenario{
		name: "memory",
		// Early, after fire only: the runtime keeps the capacity of its
		// timer heaps after their timers stop or fire, and that spare
		// room hides part of a runtime timer's cost from a later measure
		// (after fire, about 116 B instead of 130: the error favours the
		// runtime).
		order:  5,
		help:   "heap bytes per pending timer, -pending timers due in 1-2h, handles kept",
		timers: func(o *options) int { return o.pending },
		run:    runMemory,
	})
}

// runMemory measures the heap that -pending timers take in each engine:
// the live heap after runtime.GC() with the timers pending and their
// handles kept in a slice, less the live heap before and the slice itself.
// For the wheel it includes the wheel's own buckets.
func runMemory(e *env) ([]row, error) {
	n := e.opts.pending
	label := "N=" + formatCount(n)
	sliceBytes := sliceHeapBytes(n)

	wheelBytes, err := wheelHeapPerTimer(e, n, sliceBytes, label)
	if err != nil {
		return nil, err
	}
	release()
	runtimeBytes := runtimeHeapPerTimer(e, n, sliceBytes, label)
	release()

	return []row{both("heap per pending timer "+label, unitBTimer, wheelBytes, runtimeBytes)}, nil
}

// wheelHeapPerTimer returns the heap per timer of a wheel holding n
// timers.
func wheelHeapPerTimer(e *env, n int, sliceBytes uint64, label string) (float64, error) {
	base := liveHeap()
	w, timers, err := e.preloadWheel("memory: preloading wheel, "+label, n, true)
	if err != nil {
		return 0, err
	}
	defer w.Stop()
	after := liveHeap()
	runtime.KeepAlive(timers)
	return perTimer(base, after, sliceBytes, n), nil
}

// runtimeHeapPerTimer returns the heap per timer of n runtime timers.
func runtimeHeapPerTimer(e *env, n int, sliceBytes uint64, label string) float64 {
	base := liveHeap()
	timers := e.preloadRuntime("memory: preloading runtime, "+label, n)
	after := liveHeap()
	stopRuntime(timers)
	return perTimer(base, after, sliceBytes, n)
}

// perTimer returns the heap growth from base to after, less the handle
// slice, per timer.
func perTimer(base, after, sliceBytes uint64, n int) float64 {
	return (float64(after) - float64(base) - float64(sliceBytes)) / float64(n)
}

// sliceHeapBytes measures the heap that a slice of n pointers takes, as
// rounded up by the allocator; never less than 8n.
func sliceHeapBytes(n int) uint64 {
	base := liveHeap()
	s := make([]*int, n)
	after := liveHeap()
	runtime.KeepAlive(s)
	return max(after-min(base, after), uint64(n)*8)
}

// liveHeap collects the heap and returns the bytes of live objects.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
