package main

import (
	"fmt"
	"runtime"
	"time"
)

// init registers the idle scenario.
func init() {
	register(scenario{
		name:   "idle",
		order:  40,
		help:   "process CPU over -idle-for with -pending timers due in 1-2h: shows the driver sleeps",
		timers: func(o *options) int { return o.pending },
		run:    runIdle,
	})
}

// runIdle preloads -pending timers due in 1-2h in each engine, then
// measures the CPU time the whole process uses while it sleeps for
// -idle-for. Nothing is due, so an engine that sleeps costs close to none.
func runIdle(e *env) ([]row, error) {
	n := e.opts.pending
	label := "N=" + formatCount(n)

	w, _, err := e.preloadWheel("idle: preloading wheel, "+label, n, false)
	if err != nil {
		return nil, err
	}
	wheelCPU := idleCPU(e.opts.idleFor)
	w.Stop()
	release()

	timers := e.preloadRuntime("idle: preloading runtime, "+label, n)
	runtimeCPU := idleCPU(e.opts.idleFor)
	stopRuntime(timers)
	release()

	return []row{
		both(fmt.Sprintf("CPU over %v idle, %s", e.opts.idleFor, label), unitMillis, millis(wheelCPU), millis(runtimeCPU)),
	}, nil
}

// idleCPU collects the heap, so that no GC work is left over, then returns
// the process CPU time used while sleeping for d.
func idleCPU(d time.Duration) time.Duration {
	runtime.GC()
	before := cpuTime()
	time.Sleep(d)
	return cpuTime() - before
}
