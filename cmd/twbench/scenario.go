package main

import (
	"sort"
	"time"
)

// A scenario is one benchmark that twbench can run. Each lives in its own
// file, scenarios_NAME.go, and registers itself from an init function:
//
//	func init() {
//		register(scenario{name: "queue", order: 60, help: "...",
//			timers: func(o *options) int { return o.pending },
//			run:    runQueue})
//	}
//
// That is all it takes to add one: it is then listed by -help, runnable
// by name and part of "all".
type scenario struct {
	// name is what selects the scenario on the command line.
	name string
	// order places the scenario in "all" and in -help: lower runs first.
	order int
	// needsRedis marks a scenario that runs only with a redis:// -store:
	// "all" leaves it out otherwise, and naming it is an error.
	needsRedis bool
	// needsPostgres marks a scenario that runs only with a postgres://
	// -store, likewise.
	needsPostgres bool
	// help is a one-line description for the usage message.
	help string
	// timers returns the most timers one engine holds at once with these
	// options, for the memory check made before anything runs. The two
	// engines are measured one after the other, never loaded at once.
	timers func(o *options) int
	// run measures both engines and returns the scenario's figures. The
	// runner fills in each row's Scenario.
	run func(e *env) ([]row, error)
}

// registry holds every registered scenario, sorted by order.
var registry []scenario

// register adds s to the registry. It panics on a duplicate name, which
// is a programming error.
func register(s scenario) {
	for _, r := range registry {
		if r.name == s.name {
			panic("twbench: scenario " + s.name + " registered twice")
		}
	}
	registry = append(registry, s)
	sort.SliceStable(registry, func(i, j int) bool { return registry[i].order < registry[j].order })
}

// lookup returns the registered scenario called name.
func lookup(name string) (scenario, bool) {
	for _, s := range registry {
		if s.name == name {
			return s, true
		}
	}
	return scenario{}, false
}

// scenarioNames returns the names of every registered scenario, in order.
func scenarioNames() []string {
	names := make([]string, len(registry))
	for i, s := range registry {
		names[i] = s.name
	}
	return names
}

// A row is one figure of one scenario: the wheel's value, the runtime's
// (nil when only the wheel has that figure) and the unit they share.
type row struct {
	Scenario string
	Figure   string
	Ours     float64
	Runtime  *float64
	Unit     string
}

// ratio returns ours/runtime, or false when there is no runtime figure,
// it is zero, or either is negative (a lateness of a message delivered
// early), where a ratio means nothing.
func (r row) ratio() (float64, bool) {
	if r.Runtime == nil || *r.Runtime == 0 || *r.Runtime < 0 || r.Ours < 0 {
		return 0, false
	}
	return r.Ours / *r.Runtime, true
}

// both returns a row with a figure for each engine.
func both(figure, unit string, ours, runtime float64) row {
	return row{Figure: figure, Ours: ours, Runtime: &runtime, Unit: unit}
}

// oursOnly returns a row for a figure that only the wheel has.
func oursOnly(figure, unit string, ours float64) row {
	return row{Figure: figure, Ours: ours, Unit: unit}
}

// Units of the figures, shared by the scenarios so the table reads alike.
const (
	unitNsOp     = "ns/op"
	unitAllocsOp = "allocs/op"
	unitBytesOp  = "B/op"
	unitTimers   = "timers"
	unitBTimer   = "B/timer"
	unitSeconds  = "s"
	unitMillis   = "ms"
	unitMicros   = "µs"
	unitPerSec   = "expiries/s"
	unitOpsSec   = "ops/s"
	unitCount    = "count"
	unitTimes    = "x"
	unitSwitches = "switches/s"
)

// seconds converts d to float seconds, for rows in unitSeconds.
func seconds(d time.Duration) float64 { return d.Seconds() }

// micros converts d to float microseconds, for rows in unitMicros.
func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// millis converts d to float milliseconds, for rows in unitMillis.
func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
