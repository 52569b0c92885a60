package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseCount checks the count forms flags accept and refuse.
func TestParseCount(t *testing.T) {
	good := map[string]int{
		"2000": 2000, "1": 1, "500k": 500_000, "500K": 500_000, "1M": 1_000_000,
		"1m": 1_000_000, "1.5M": 1_500_000, "1.1k": 1100, "2G": 2_000_000_000, " 10k ": 10_000,
	}
	for in, want := range good {
		got, err := parseCount(in)
		if assert.NoError(t, err, in) {
			assert.Equal(t, want, got, in)
		}
	}
	for _, in := range []string{"", "0", "-5", "1X", "1.5", "0.0001k", "abc", "1e6", "inf", "1MM", "1,000", "5T"} {
		_, err := parseCount(in)
		assert.Error(t, err, in)
	}
}

// TestFormatCount checks that counts are written with the largest whole suffix.
func TestFormatCount(t *testing.T) {
	for n, want := range map[int]string{1: "1", 2500: "2500", 2000: "2k", 500_000: "500k", 1_000_000: "1M", 3_000_000_000: "3G"} {
		assert.Equal(t, want, formatCount(n))
	}
}

// TestParseArgsDefaults checks the full-size defaults.
func TestParseArgsDefaults(t *testing.T) {
	o, err := parseArgs(nil)
	require.NoError(t, err)
	assert.Equal(t, []int{1_000_000, 5_000_000, 10_000_000}, o.ns)
	assert.Equal(t, 1_000_000, o.pending)
	assert.Equal(t, 1_000_000, o.fireN)
	assert.Equal(t, 2*time.Second, o.window)
	assert.Equal(t, 3, o.rounds)
	assert.Equal(t, 5*time.Second, o.idleFor)
	assert.Equal(t, 2*time.Second, o.parallelFor)
	assert.Equal(t, 8, o.goroutines)
	assert.Equal(t, time.Millisecond, o.tick)
	assert.Equal(t, 512, o.wheelSize)
	assert.Equal(t, executorGoroutine, o.executor)
	assert.Equal(t, namesWithoutServers(), namesOf(o.scenarios), "no scenario means all (but asynq and river, without a Redis or a PostgreSQL)")
}

// TestParseArgsQuick checks that -quick reduces the sizes not set explicitly.
func TestParseArgsQuick(t *testing.T) {
	o, err := parseArgs([]string{"-quick"})
	require.NoError(t, err)
	assert.True(t, o.quick)
	assert.Equal(t, []int{100_000, 1_000_000}, o.ns)
	assert.Equal(t, 200_000, o.fireN)
	assert.Equal(t, time.Second, o.window)
	assert.Equal(t, 3, o.rounds, "-quick keeps the rounds: they make its tail rows stable")
	assert.Equal(t, time.Second, o.idleFor)

	// A flag given explicitly wins over -quick, wherever it stands.
	o, err = parseArgs([]string{"-n", "2000", "-quick", "-window=300ms"})
	require.NoError(t, err)
	assert.Equal(t, []int{2000}, o.ns)
	assert.Equal(t, 300*time.Millisecond, o.window)
	assert.Equal(t, 200_000, o.fireN)
}

// TestParseArgsScenariosAndFlagsInterleaved checks that scenario names and flags mix in any order.
func TestParseArgsScenariosAndFlagsInterleaved(t *testing.T) {
	o, err := parseArgs([]string{"fire", "-fire-n", "2k", "startstop", "-n", "1M,500k,2000", "fire", "-tick", "2ms", "-executor", "inline"})
	require.NoError(t, err)
	assert.Equal(t, []string{"fire", "startstop"}, namesOf(o.scenarios), "repeats dropped, registry order")
	assert.Equal(t, 2000, o.fireN)
	assert.Equal(t, []int{1_000_000, 500_000, 2000}, o.ns)
	assert.Equal(t, 2*time.Millisecond, o.tick)
	assert.Equal(t, executorInline, o.executor)

	o, err = parseArgs([]string{"idle", "all"})
	require.NoError(t, err)
	assert.Equal(t, namesWithoutServers(), namesOf(o.scenarios))
	assert.Equal(t, "fire", o.scenarios[0].name, "fire runs first, in a fresh process")
	assert.Equal(t, "memory", o.scenarios[1].name, "memory runs next")

	o, err = parseArgs([]string{"-g", "3", "--", "parallel"})
	require.NoError(t, err)
	assert.Equal(t, []string{"parallel"}, namesOf(o.scenarios))
	assert.Equal(t, 3, o.goroutines)
}

// TestRunRejectsBadInput checks that bad flags and arguments exit 2 with
// two lines: the error, and where the usage is.
func TestRunRejectsBadInput(t *testing.T) {
	cases := map[string][]string{
		"unknown scenario":   {"nosuch"},
		"bad -n":             {"-n", "1M,x"},
		"empty -n item":      {"-n", "1M,,2"},
		"zero count":         {"-fire-n", "0"},
		"negative window":    {"-window", "-1s"},
		"zero idle-for":      {"-idle-for", "0s"},
		"negative for":       {"-for", "-5ms"},
		"negative tick":      {"-tick", "-1ms"},
		"bad duration":       {"-window", "soon"},
		"bad wheel size":     {"-wheel-size", "0"},
		"huge wheel size":    {"-wheel-size", "10000000"},
		"bad executor":       {"-executor", "pool"},
		"zero goroutines":    {"-g", "0"},
		"zero rounds":        {"-rounds", "0"},
		"unknown flag":       {"-nosuch"},
		"missing value":      {"-n"},
		"plot extension":     {"-plot", "out.pdf", "fire"},
		"plot without data":  {"-plot", "out.png", "idle"},
		"non-numeric g":      {"-g", "many"},
		"quick takes no arg": {"-quick=maybe"},
		"pg-unsafe, no own":  {"-pg-unsafe", "-store", "bolt", "durable"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(args, &stdout, &stderr)
			assert.Equal(t, 2, code)
			assert.Empty(t, stdout.String())
			lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
			require.Len(t, lines, 2, stderr.String())
			assert.True(t, strings.HasPrefix(lines[0], "twbench: "), lines[0])
			assert.Equal(t, "Run 'twbench -h' for usage.", lines[1])
		})
	}
}

// TestRunHelp checks that -help prints the usage to stdout and exits 0.
func TestRunHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 0, run([]string{"-help"}, &stdout, &stderr))
	assert.Empty(t, stderr.String())
	for _, name := range scenarioNames() {
		assert.Contains(t, stdout.String(), name)
	}
	assert.Contains(t, stdout.String(), "-plot")
}

// TestRunRefusesWhatDoesNotFit checks that a run too big for memory exits 1 before it starts.
func TestRunRefusesWhatDoesNotFit(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"startstop", "-n", "1M,100G"}, &stdout, &stderr)
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout.String())
	assert.Contains(t, stderr.String(), "not enough memory")
	assert.Contains(t, stderr.String(), "100G timers")
	assert.NotContains(t, stderr.String(), "Usage")
}

// TestCheckMemoryAgainst checks the memory estimate against a given amount.
func TestCheckMemoryAgainst(t *testing.T) {
	o, err := parseArgs([]string{"startstop", "memory", "-n", "1M,10M", "-pending", "2M"})
	require.NoError(t, err)
	// Engines are loaded one after the other: the peak is 10M timers.
	require.NoError(t, checkMemoryAgainst(o, 10_000_000*memPerTimer))
	err = checkMemoryAgainst(o, 10_000_000*memPerTimer-1)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "scenario startstop")
}

// namesOf returns the names of ss.
func namesOf(ss []scenario) []string {
	var names []string
	for _, s := range ss {
		names = append(names, s.name)
	}
	return names
}
