package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFormatValue checks the number formats of the table.
func TestFormatValue(t *testing.T) {
	for v, want := range map[float64]string{
		0: "0", 1_234_567: "1,234,567", -2500: "-2,500", 523.4: "523", 52.34: "52.3",
		5.234: "5.23", 0.5234: "0.523", 0.0001234: "0.000123", 7: "7", 1: "1",
	} {
		assert.Equal(t, want, formatValue(v), "%v", v)
	}
}

// TestFormatRatio checks the ratio formats of the table.
func TestFormatRatio(t *testing.T) {
	for q, want := range map[float64]string{0.3125: "0.31x", 2.5: "2.50x", 12.34: "12.3x", 123.4: "123x"} {
		assert.Equal(t, want, formatRatio(q))
	}
}

// TestWriteTable checks the table's columns, dashes and alignment.
func TestWriteTable(t *testing.T) {
	rows := []row{
		both("start+stop N=1M", unitNsOp, 100, 320),
		both("pending at start N=1M", unitTimers, 1_000_000, 1_000_000),
		both("early firings", unitCount, 0, 0),
		oursOnly("wheel only", unitCount, 7),
	}
	rows[0].Scenario, rows[1].Scenario = "startstop", "startstop"
	rows[2].Scenario, rows[3].Scenario = "fire", "fire"
	var b bytes.Buffer
	require.NoError(t, writeTable(&b, rows))
	lines := strings.Split(b.String(), "\n")
	assert.Equal(t, []string{"startstop", "start+stop", "N=1M", "100", "320", "0.31x", "ns/op"}, strings.Fields(lines[1]))
	assert.Equal(t, []string{"pending", "at", "start", "N=1M", "1,000,000", "1,000,000", "1.00x", "timers"}, strings.Fields(lines[2]),
		"the scenario is named on its first row only")
	assert.Equal(t, []string{"fire", "early", "firings", "0", "0", "-", "count"}, strings.Fields(lines[3]))
	assert.Equal(t, []string{"wheel", "only", "7", "-", "-", "count"}, strings.Fields(lines[4]))
	// Columns line up: OURS starts at the same offset on every row.
	col := strings.Index(lines[0], "OURS")
	for _, l := range lines[1:5] {
		assert.NotEqual(t, ' ', rune(l[col]), l)
		assert.Equal(t, ' ', rune(l[col-1]), l)
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
