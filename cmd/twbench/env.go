package main

import (
	"io"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/seed64e23a5c/timingwheel"
)

// env is what a scenario runs with: the options, the progress bars, and
// the samples that the plot draws.
type env struct {
	opts     *options
	stderr   io.Writer
	progress progress

	// lateness holds the fire scenario's sorted lateness samples per
	// engine label, in the order the labels were added (lateOrder).
	lateness  map[string][]time.Duration
	lateOrder []string
	// startstop holds startstop's ns/op per N, in the order measured.
	startstop []startstopPoint
}

// startstopPoint is one N of the startstop scenario, for the plot.
type startstopPoint struct {
	n                int
	wheelNs, runtime float64
}

// newEnv returns the environment for a run with o, writing progress and
// warnings to stderr.
func newEnv(o *options, stderr io.Writer) *env {
	return &env{
		opts:     o,
		stderr:   stderr,
		progress: newProgress(stderr),
		lateness: map[string][]time.Duration{},
	}
}

// addLateness records the sorted lateness samples of one engine for the
// plot.
func (e *env) addLateness(label string, sorted []time.Duration) {
	if _, ok := e.lateness[label]; !ok {
		e.lateOrder = append(e.lateOrder, label)
	}
	e.lateness[label] = sorted
}

// nop is the task of every timer that is not meant to fire.
func nop() {}

// farDeadline returns a delay in [1h, 2h), so that a preloaded timer
// never fires while a scenario runs.
func farDeadline(r *rand.Rand) time.Duration {
	return time.Hour + time.Duration(r.Int64N(int64(time.Hour)))
}

// newRand returns the deterministic source of preload deadlines.
func newRand() *rand.Rand { return rand.New(rand.NewPCG(1, 2)) }

// newWheel returns a started wheel configured by the flags, with extra
// options applied last.
func (e *env) newWheel(extra ...timingwheel.Option) (*timingwheel.TimingWheel, error) {
	w, err := timingwheel.New(append(e.opts.wheelOptions(), extra...)...)
	if err != nil {
		return nil, err
	}
	w.Start()
	return w, nil
}

// each calls body(i) for i in [0, n), showing a progress bar described
// by desc when stderr is a terminal. The bar is updated in chunks so it
// costs nothing measurable.
func (e *env) each(desc string, n int, body func(i int)) {
	const chunk = 1 << 15
	b := e.progress.start(desc, n)
	for i := 0; i < n; i += chunk {
		end := min(i+chunk, n)
		for j := i; j < end; j++ {
			body(j)
		}
		b.add(end - i)
	}
	b.finish()
}

// preloadWheel returns a started wheel with n timers due in 1-2h, and
// their handles if keep is set.
func (e *env) preloadWheel(desc string, n int, keep bool) (*timingwheel.TimingWheel, []*timingwheel.Timer, error) {
	w, err := e.newWheel()
	if err != nil {
		return nil, nil, err
	}
	var timers []*timingwheel.Timer
	if keep {
		timers = make([]*timingwheel.Timer, n)
	}
	r := newRand()
	e.each(desc, n, func(i int) {
		t := w.AfterFunc(farDeadline(r), nop)
		if keep {
			timers[i] = t
		}
	})
	return w, timers, nil
}

// preloadRuntime returns n runtime timers due in 1-2h.
func (e *env) preloadRuntime(desc string, n int) []*time.Timer {
	timers := make([]*time.Timer, n)
	r := newRand()
	e.each(desc, n, func(i int) {
		timers[i] = time.AfterFunc(farDeadline(r), nop)
	})
	return timers
}

// stopRuntime stops every timer of ts and returns how many were still
// pending: those whose Stop returned true.
func stopRuntime(ts []*time.Timer) int {
	n := 0
	for _, t := range ts {
		if t.Stop() {
			n++
		}
	}
	return n
}

// release frees what the previous engine left behind once the caller has
// dropped its references: it collects the heap and hands the memory back
// to the OS, so the next engine starts from the same place.
func release() {
	// Let the runtime's timer heaps drop the timers just stopped.
	time.Sleep(10 * time.Millisecond)
	runtime.GC()
	debug.FreeOSMemory()
}
