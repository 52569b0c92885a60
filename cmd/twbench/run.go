package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"
)

// run is the whole program: it parses args, checks that the run fits in
// memory and that its store answers, runs the scenarios, writing each
// one's rows to the table as soon as it finishes, and writes the JSON
// and the plot. It returns the exit status: 0 on success, 1 when a run
// cannot be done or fails, 2 for bad flags or arguments.
func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		printUsage(stdout)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "twbench: %v\n%s\n", err, usageHint)
		return 2
	}
	if err := checkMemory(o); err != nil {
		fmt.Fprintf(stderr, "twbench: %v\n", err)
		return 1
	}
	silenceRedisLog()
	if o.store == storeOwnPostgres {
		stop, err := startPostgres(o)
		if err != nil {
			fmt.Fprintf(stderr, "twbench: %v\n", err)
			return 1
		}
		defer stop()
	}
	if err := checkStore(o); err != nil {
		fmt.Fprintf(stderr, "twbench: %v\n", err)
		return 1
	}

	tableOut := stdout
	if o.jsonPath == "-" {
		tableOut = stderr
	}
	e := newEnv(o, stderr)
	table := newTableWriter(tableOut, scenarioNames())
	rows, err := runScenarios(e, o.scenarios, table)
	if err != nil {
		fmt.Fprintf(stderr, "twbench: %v\n", err)
		return 1
	}
	if err := table.finish(); err != nil {
		fmt.Fprintf(stderr, "twbench: writing the table: %v\n", err)
		return 1
	}
	if err := writePostgresNote(tableOut, o); err != nil {
		fmt.Fprintf(stderr, "twbench: writing the table: %v\n", err)
		return 1
	}
	if o.quick {
		if err := writeLatenessNote(tableOut, o); err != nil {
			fmt.Fprintf(stderr, "twbench: writing the table: %v\n", err)
			return 1
		}
	}
	if o.jsonPath != "" {
		if err := writeJSON(o.jsonPath, stdout, newReport(args, o, rows, time.Now())); err != nil {
			fmt.Fprintf(stderr, "twbench: writing JSON: %v\n", err)
			return 1
		}
	}
	if o.plotPath != "" {
		if err := writePlot(o.plotPath, e, time.Now()); err != nil {
			fmt.Fprintf(stderr, "twbench: writing the plot: %v\n", err)
			return 1
		}
	}
	return 0
}

// usageHint is the line under a command-line error.
const usageHint = "Run 'twbench -h' for usage."

// runScenarios runs scenarios in order, writing each one's rows to table
// as soon as it finishes, and returns all their rows. It stops at the
// first that fails; the rows of those before it are in the table.
func runScenarios(e *env, scenarios []scenario, table *tableWriter) ([]row, error) {
	var rows []row
	for _, s := range scenarios {
		// Start each scenario from a settled heap: what an earlier one
		// freed (gigabytes after startstop at 10M) is collected and given
		// back now, not by the scavenger while this one measures.
		release()
		rs, err := s.run(e)
		if err != nil {
			return rows, fmt.Errorf("%s: %w", s.name, err)
		}
		for i := range rs {
			rs[i].Scenario = s.name
		}
		if err := table.writeRows(rs); err != nil {
			return rows, fmt.Errorf("writing the table: %w", err)
		}
		rows = append(rows, rs...)
	}
	return rows, nil
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
