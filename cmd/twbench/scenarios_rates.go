package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/seed64e23a5c/timingwheel"
)

// The rate sweep (fire -rates): the wheel with New's defaults and the
// default goroutine executor against runtime timers at the rates services
// run at, from a few thousand timers a second to a million over two
// seconds. Each measurement runs in a fresh process, so that neither side
// inherits the other's goroutines, heap or timer heaps; rounds alternate
// which side goes first, and each figure is the median of its rounds.

// fireRates are the sweep's rates: n timers due uniformly over window.
var fireRates = []struct {
	n      int
	window time.Duration
}{
	{2_000, time.Second},
	{10_000, time.Second},
	{50_000, time.Second},
	{200_000, time.Second},
	{1_000_000, 2 * time.Second},
}

// rateChildEnv names the variable that makes twbench a child of the sweep:
// "wheel N WINDOW" or "runtime N WINDOW". The child measures once and
// prints a rateFigures as JSON.
const rateChildEnv = "TWBENCH_RATE_CHILD"

// rateFigures is what one child measured.
type rateFigures struct {
	CPU      time.Duration // process CPU from the first timer scheduled to the last fired
	P50, P99 time.Duration
	Early    int
	Switches int64 // the process's context switches meanwhile, voluntary and not
	Window   time.Duration
}

// runRates runs the sweep: for every rate, rounds of a wheel child and a
// runtime child, alternating which goes first.
func runRates(e *env) ([]row, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("fire -rates starts itself in fresh processes: %w", err)
	}
	var rows []row
	for _, r := range fireRates {
		var wheel, rt []rateFigures
		for round := range e.opts.rounds {
			order := []string{"wheel", "runtime"}
			if round%2 == 1 {
				order = []string{"runtime", "wheel"}
			}
			for _, side := range order {
				f, err := rateChild(exe, side, r.n, r.window, e.stderr)
				if err != nil {
					return nil, err
				}
				if f.Early > 0 {
					return nil, fmt.Errorf("fire -rates: %s fired %d of %d timers early", side, f.Early, r.n)
				}
				if side == "wheel" {
					wheel = append(wheel, f)
				} else {
					rt = append(rt, f)
				}
				fmt.Fprintf(e.stderr, "twbench: fire -rates %d/%v round %d %s: CPU %v p50 %v p99 %v switches %d\n",
					r.n, r.window, round+1, side, f.CPU.Round(time.Millisecond), f.P50.Round(time.Microsecond), f.P99.Round(time.Microsecond), f.Switches)
			}
		}
		name := fmt.Sprintf("%s over %v", countLabel(r.n), r.window)
		sw := func(f rateFigures) float64 { return float64(f.Switches) / f.Window.Seconds() }
		rows = append(rows,
			bothMedians(pairs(wheel, rt), name+": CPU", unitSeconds, firstCPU, secondCPU),
			bothMedians(pairs(wheel, rt), name+": lateness p50", unitMicros, func(p [2]rateFigures) float64 { return micros(p[0].P50) }, func(p [2]rateFigures) float64 { return micros(p[1].P50) }),
			bothMedians(pairs(wheel, rt), name+": lateness p99", unitMicros, func(p [2]rateFigures) float64 { return micros(p[0].P99) }, func(p [2]rateFigures) float64 { return micros(p[1].P99) }),
			bothMedians(pairs(wheel, rt), name+": context switches", unitSwitches, func(p [2]rateFigures) float64 { return sw(p[0]) }, func(p [2]rateFigures) float64 { return sw(p[1]) }))
	}
	return rows, nil
}

func firstCPU(p [2]rateFigures) float64  { return seconds(p[0].CPU) }
func secondCPU(p [2]rateFigures) float64 { return seconds(p[1].CPU) }

// pairs zips the two sides' rounds.
func pairs(a, b []rateFigures) [][2]rateFigures {
	ps := make([][2]rateFigures, min(len(a), len(b)))
	for i := range ps {
		ps[i] = [2]rateFigures{a[i], b[i]}
	}
	return ps
}

// countLabel writes n as 2k or 1M.
func countLabel(n int) string {
	switch {
	case n%1_000_000 == 0:
		return strconv.Itoa(n/1_000_000) + "M"
	case n%1_000 == 0:
		return strconv.Itoa(n/1_000) + "k"
	}
	return strconv.Itoa(n)
}

// rateChild runs one measurement in a fresh process of exe.
func rateChild(exe, side string, n int, window time.Duration, stderr io.Writer) (rateFigures, error) {
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %s", rateChildEnv, side, n, window))
	cmd.Stderr = stderr // a child's warnings (a lead too short) go with the sweep's
	out, err := cmd.Output()
	if err != nil {
		return rateFigures{}, fmt.Errorf("fire -rates: the %s child for %d over %v failed: %w", side, n, window, err)
	}
	var f rateFigures
	if err := json.Unmarshal(out, &f); err != nil {
		return rateFigures{}, fmt.Errorf("fire -rates: the %s child printed %q: %w", side, out, err)
	}
	return f, nil
}

// rateChildMain runs the measurement spec asks for ("wheel 2000 1s"),
// prints its figures as JSON to stdout and returns the exit status.
func rateChildMain(spec string, stdout, stderr io.Writer) int {
	fields := strings.Fields(spec)
	if len(fields) != 3 {
		fmt.Fprintf(stderr, "twbench: %s=%q: want SIDE N WINDOW\n", rateChildEnv, spec)
		return 2
	}
	n, err1 := strconv.Atoi(fields[1])
	window, err2 := time.ParseDuration(fields[2])
	if err1 != nil || err2 != nil || n < 1 || window <= 0 {
		fmt.Fprintf(stderr, "twbench: %s=%q: bad N or WINDOW\n", rateChildEnv, spec)
		return 2
	}
	schedule := func(d time.Duration, f func()) { time.AfterFunc(d, f) }
	if fields[0] == "wheel" {
		w, err := timingwheel.New()
		if err != nil {
			fmt.Fprintln(stderr, "twbench:", err)
			return 1
		}
		w.Start()
		defer w.Stop()
		schedule = func(d time.Duration, f func()) { w.AfterFunc(d, f) }
	}
	offsets := make([]time.Duration, n)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range offsets {
		offsets[i] = time.Duration(r.Int64N(int64(window)))
	}
	o := defaultOptions()
	o.window = window
	// A fresh process schedules its first million runtime timers slower
	// than a warm one (its heap and stacks grow meanwhile): a longer lead
	// keeps every timer scheduled before the window opens, so that the
	// sweep measures firing, not scheduling.
	o.leadPerTimer = 5 * time.Microsecond
	e := newEnv(o, stderr)
	sw0 := switches()
	res, err := fireOnce(e, fields[0], offsets, schedule)
	if err != nil {
		fmt.Fprintln(stderr, "twbench:", err)
		return 1
	}
	f := rateFigures{
		CPU: res.cpu, P50: percentile(res.late, 0.50), P99: percentile(res.late, 0.99),
		Early: res.early, Switches: switches() - sw0, Window: window,
	}
	if err := json.NewEncoder(stdout).Encode(f); err != nil {
		fmt.Fprintln(stderr, "twbench:", err)
		return 1
	}
	return 0
}
