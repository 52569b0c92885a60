package main

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFormatValue checks the number formats of the table: fixed
// notation, never an exponent, from the tiny to the huge.
func TestFormatValue(t *testing.T) {
	for v, want := range map[float64]string{
		0: "0", 1_234_567: "1,234,567", -2500: "-2,500", 523.4: "523", 52.34: "52.3",
		5.234: "5.23", 0.5234: "0.523", 0.05234: "0.052", 7: "7", 1: "1",
		0.00142: "0.001", 2e-05: "<0.001", 0.0026: "0.003", 0.5: "0.5", 0.9996: "1", 0.0004: "<0.001",
		1e-9: "<0.001", -1e-9: ">-0.001", -0.25: "-0.25", 1e15: "1,000,000,000,000,000",
		1.5e12: "1,500,000,000,000", 123456.7: "123,457", math.NaN(): "-", math.Inf(1): "-",
	} {
		got := formatValue(v)
		assert.Equal(t, want, got, "%v", v)
		assert.NotContains(t, got, "e", "%v", v)
	}
}

// TestFormatCells checks that a time below 0.1 moves to a smaller unit,
// both cells alike, and that other units stay as they are.
func TestFormatCells(t *testing.T) {
	cases := []struct {
		r                   row
		ours, runtime, unit string
	}{
		{both("CPU", unitSeconds, 0.00538, 0.00583), "5.38", "5.83", unitMillis},
		{both("CPU", unitSeconds, 0.00142, 2e-05), "1.42", "0.02", unitMillis},
		{both("wall", unitSeconds, 0.102, 1.5), "0.102", "1.50", unitSeconds},
		{both("wall", unitSeconds, 0.0538, 0.06), "53.8", "60", unitMillis},
		{both("idle CPU", unitMillis, 0.186, 0.181), "0.186", "0.181", unitMillis},
		{both("idle CPU", unitMillis, 0.0186, 0.0181), "18.6", "18.1", unitMicros},
		{both("tiny", unitSeconds, 2e-9, 0), "2", "0", unitNanos},
		{both("tinier", unitMicros, 2e-4, 0), "0.2", "0", unitNanos},
		{both("lateness", unitMicros, 1049, 541), "1,049", "541", unitMicros},
		{both("zero", unitSeconds, 0, 0), "0", "0", unitSeconds},
		{oursOnly("p50", unitMillis, 0.646), "0.646", "-", unitMillis},
		{oursOnly("p50", unitMillis, 0.05), "50", "-", unitMicros},
		{both("allocs", unitAllocsOp, 2e-05, 1), "<0.001", "1", unitAllocsOp},
		{both("bytes", unitBytesOp, 0.00142, 48), "0.001", "48", unitBytesOp},
		{both("ns", unitNsOp, 0.5, 90.1), "0.5", "90.1", unitNsOp},
	}
	for _, c := range cases {
		ours, rt, unit := formatCells(c.r)
		assert.Equal(t, []string{c.ours, c.runtime, c.unit}, []string{ours, rt, unit}, "%+v", c.r)
	}
}

// TestFormatRatio checks the ratio formats of the table.
func TestFormatRatio(t *testing.T) {
	for q, want := range map[float64]string{
		0.3125: "0.31x", 2.5: "2.50x", 12.34: "12.3x", 123.4: "123x", 0.0025: "<0.01x", 0: "0.00x", 12345: "12,345x",
	} {
		assert.Equal(t, want, formatRatio(q))
	}
}

// TestTableWriter checks the table's columns, dashes and alignment, and
// that rows written a scenario at a time line up.
func TestTableWriter(t *testing.T) {
	rows := []row{
		both("start+stop N=1M", unitNsOp, 100, 320),
		both("pending at start N=1M", unitTimers, 1_000_000, 1_000_000),
		both("early firings", unitCount, 0, 0),
		oursOnly("wheel only", unitCount, 7),
		both("CPU (inline)", unitSeconds, 0.00142, 0.00284),
	}
	rows[0].Scenario, rows[1].Scenario = "startstop", "startstop"
	rows[2].Scenario, rows[3].Scenario, rows[4].Scenario = "fire", "fire", "fire"
	var b bytes.Buffer
	tw := newTableWriter(&b, []string{"fire", "startstop"})
	require.NoError(t, tw.writeRows(rows[:2]))
	require.NoError(t, tw.writeRows(rows[2:]))
	require.NoError(t, tw.finish())
	lines := strings.Split(b.String(), "\n")
	assert.Equal(t, []string{"SCENARIO", "FIGURE", "OURS", "RUNTIME", "RATIO", "UNIT"}, strings.Fields(lines[0]))
	assert.Equal(t, []string{"startstop", "start+stop", "N=1M", "100", "320", "0.31x", "ns/op"}, strings.Fields(lines[1]))
	assert.Equal(t, []string{"pending", "at", "start", "N=1M", "1,000,000", "1,000,000", "1.00x", "timers"}, strings.Fields(lines[2]),
		"the scenario is named on its first row only")
	assert.Equal(t, []string{"fire", "early", "firings", "0", "0", "-", "count"}, strings.Fields(lines[3]))
	assert.Equal(t, []string{"wheel", "only", "7", "-", "-", "count"}, strings.Fields(lines[4]))
	assert.Equal(t, []string{"CPU", "(inline)", "1.42", "2.84", "0.50x", "ms"}, strings.Fields(lines[5]))
	assert.Equal(t, []string{"", ratioLegend, ""}, lines[6:])
	// Columns line up across the two scenarios: the figure starts at the
	// same offset on every row, and OURS, RUNTIME and RATIO end at the
	// same offset (numbers are right-aligned).
	header := []rune(lines[0])
	figCol := strings.Index(lines[0], "FIGURE")
	for _, l := range lines[1:6] {
		r := []rune(l)
		assert.NotEqual(t, ' ', r[figCol], l)
		assert.Equal(t, ' ', r[figCol-1], l)
		for _, name := range []string{"OURS", "RUNTIME", "RATIO"} {
			end := strings.Index(string(header), name) + len(name) - 1
			assert.NotEqual(t, ' ', r[end], "%s ends at %d: %s", name, end, l)
			assert.Equal(t, ' ', r[end+1], "%s ends at %d: %s", name, end, l)
		}
	}
}

// TestPercentile checks the quantiles of a known sample.
func TestPercentile(t *testing.T) {
	s := make([]int64, 1000)
	for i := range s {
		s[i] = int64(i + 1)
	}
	d := make([]time.Duration, len(s))
	for i, v := range s {
		d[i] = time.Duration(v)
	}
	assert.Equal(t, time.Duration(500), percentile(d, 0.5))
	assert.Equal(t, time.Duration(990), percentile(d, 0.99))
	assert.Equal(t, time.Duration(999), percentile(d, 0.999))
	assert.Equal(t, time.Duration(1000), percentile(d, 1))
	assert.Equal(t, time.Duration(0), percentile(nil, 0.5))
}
