package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"
)

// run is the whole program: it parses args, checks that the run fits in
// memory, runs the scenarios and writes the table, the JSON and the plot.
// It returns the exit status: 0 on success, 1 when a run cannot be done
// or fails, 2 for bad flags or arguments.
func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		printUsage(stdout)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "twbench: %v\n\n", err)
		printUsage(stderr)
		return 2
	}
	if err := checkMemory(o); err != nil {
		fmt.Fprintf(stderr, "twbench: %v\n", err)
		return 1
	}

	e := newEnv(o, stderr)
	var rows []row
	for _, s := range o.scenarios {
		// Start each scenario from a settled heap: what an earlier one
		// freed (gigabytes after startstop at 10M) is collected and given
		// back now, not by the scavenger while this one measures.
		release()
		rs, err := s.run(e)
		if err != nil {
			fmt.Fprintf(stderr, "twbench: %s: %v\n", s.name, err)
			return 1
		}
		for i := range rs {
			rs[i].Scenario = s.name
		}
		rows = append(rows, rs...)
	}

	tableOut := stdout
	if o.jsonPath == "-" {
		tableOut = stderr
	}
	if err := writeTable(tableOut, rows); err != nil {
		fmt.Fprintf(stderr, "twbench: writing the table: %v\n", err)
		return 1
	}
	if o.jsonPath != "" {
		if err := writeJSON(o.jsonPath, stdout, newReport(args, o, rows, time.Now())); err != nil {
			fmt.Fprintf(stderr, "twbench: writing JSON: %v\n", err)
			return 1
		}
	}
	if o.plotPath != "" {
		if err := writePlot(o.plotPath, e); err != nil {
			fmt.Fprintf(stderr, "twbench: writing the plot: %v\n", err)
			return 1
		}
	}
	return 0
}

// checkMemory refuses a run whose pending timers would not fit in the
// memory available. Scenarios run one after the other and each loads one
// engine at a time, so the peak is the largest scenario's timers at
// memPerTimer bytes each. Where /proc/meminfo cannot be read, it lets the
// run go.
func checkMemory(o *options) error {
	avail, ok := memAvailable()
	if !ok {
		return nil
	}
	return checkMemoryAgainst(o, avail)
}

// checkMemoryAgainst is checkMemory with the available bytes given.
func checkMemoryAgainst(o *options, avail int64) error {
	worst, timers := "", 0
	for _, s := range o.scenarios {
		if n := s.timers(o); n > timers {
			worst, timers = s.name, n
		}
	}
	need := int64(timers) * memPerTimer
	if need <= avail {
		return nil
	}
	return fmt.Errorf("not enough memory: scenario %s keeps %s timers pending, about %s at ~%d bytes each, but only %s is available (MemAvailable in /proc/meminfo); use smaller sizes (-n, -pending, -fire-n) or -quick",
		worst, formatCount(timers), formatBytes(need), memPerTimer, formatBytes(avail))
}

// formatBytes writes b in GiB, MiB or KiB with one decimal.
func formatBytes(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
}
