package main

import (
	"fmt"
	"io"
)

// Widths of the table's columns that do not depend on the scenario
// names. A longer cell pushes the rest of its row to the right.
const (
	figureWidth = 66 // the longest figure, queue's heap per pending item, at N=500k
	valueWidth  = 11 // 999,999,999
	ratioWidth  = 7  // 0.31x, 1,234x
)

// ratioLegend is the line under the table that says how to read RATIO.
const ratioLegend = "ratio = ours/runtime: below 1x is better for times, bytes, allocs, lateness, CPU, commands/msg, statements/msg, commits/msg and fsyncs/msg; above 1x for rates (/s) and scaling."

// tableWriter writes the table a scenario at a time, in columns of fixed
// width, so that each scenario's rows can go out as soon as it finishes
// and still line up with the others: scenario (named on its first row
// only), figure, ours, runtime, ratio (ours/runtime) and unit. Figures
// only the wheel has show "-" for runtime and ratio.
type tableWriter struct {
	w         io.Writer
	nameWidth int
	started   bool
}

// newTableWriter returns a table writer to w whose scenario column fits
// every name of names.
func newTableWriter(w io.Writer, names []string) *tableWriter {
	t := &tableWriter{w: w, nameWidth: len("SCENARIO")}
	for _, n := range names {
		t.nameWidth = max(t.nameWidth, len(n))
	}
	return t
}

// writeRows writes the rows of one scenario, after the header if they
// are the first.
func (t *tableWriter) writeRows(rows []row) error {
	if err := t.header(); err != nil {
		return err
	}
	last := ""
	for _, r := range rows {
		name := r.Scenario
		if name == last {
			name = ""
		}
		last = r.Scenario
		ours, rt, unit := formatCells(r)
		ratio := "-"
		if q, ok := r.ratio(); ok {
			ratio = formatRatio(q)
		}
		if err := t.line(name, r.Figure, ours, rt, ratio, unit); err != nil {
			return err
		}
	}
	return nil
}

// finish ends the table with the legend of the ratio column.
func (t *tableWriter) finish() error {
	if err := t.header(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(t.w, "\n%s\n", ratioLegend)
	return err
}

// header writes the header line, once.
func (t *tableWriter) header() error {
	if t.started {
		return nil
	}
	t.started = true
	return t.line("SCENARIO", "FIGURE", "OURS", "RUNTIME", "RATIO", "UNIT")
}

// line writes one line of cells in their columns: text on the left,
// numbers on the right.
func (t *tableWriter) line(name, figure, ours, runtime, ratio, unit string) error {
	_, err := fmt.Fprintf(t.w, "%-*s  %-*s  %*s  %*s  %*s  %s\n",
		t.nameWidth, name, figureWidth, figure, valueWidth, ours, valueWidth, runtime, ratioWidth, ratio, unit)
	return err
}
