package main

import (
	"bytes"
	"encoding/json"
	"image"
	_ "image/png"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tinyArgs make every scenario run in a moment, even under -race.
var tinyArgs = []string{
	"-n", "2000,4k", "-ops", "2000", "-pending", "2000",
	"-fire-n", "2000", "-window", "100ms",
	"-idle-for", "200ms", "-for", "100ms", "-g", "3",
}

// tinyRun runs twbench with tinyArgs and extra, checks it succeeded, and
// returns what it wrote to stdout and stderr.
func tinyRun(t *testing.T, extra ...string) (stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(append(append([]string{}, tinyArgs...), extra...), &out, &errOut)
	require.Equal(t, 0, code, "stderr: %s", errOut.String())
	return out.String(), errOut.String()
}

// TestTinyRunOfEveryScenario runs every scenario at a tiny size with JSON
// and a PNG plot, and checks that each figure is there and sane.
func TestTinyRunOfEveryScenario(t *testing.T) {
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "out.json")
	pngPath := filepath.Join(dir, "out.png")
	stdout, stderr := tinyRun(t, "-json", jsonPath, "-plot", pngPath, "all")
	assert.NotContains(t, stderr, "\x1b", "no progress bar when stderr is not a terminal")

	// The table: a header, every scenario, and ratios.
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.NotEmpty(t, lines)
	assert.Equal(t, []string{"SCENARIO", "FIGURE", "OURS", "RUNTIME", "RATIO", "UNIT"}, strings.Fields(lines[0]))
	for _, name := range namesWithoutServers() {
		assert.Contains(t, stdout, "\n"+name+" ", "table names scenario %s", name)
	}
	assert.Regexp(t, `\d\.\d\dx`, stdout)

	// The JSON: every field present, and every row sane.
	data, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	var raw map[string]any
	require.NoError(t, json.Unmarshal(data, &raw))
	for _, key := range []string{"go_version", "gomaxprocs", "cpu_model", "date", "args", "wheel", "rows"} {
		assert.Contains(t, raw, key)
	}
	var rep report
	require.NoError(t, json.Unmarshal(data, &rep))
	assert.True(t, strings.HasPrefix(rep.GoVersion, "go"), rep.GoVersion)
	assert.Positive(t, rep.GOMAXPROCS)
	assert.NotEmpty(t, rep.CPUModel)
	assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)$`, rep.Date)
	assert.Equal(t, "1ms", rep.Wheel.Tick)
	assert.Equal(t, 512, rep.Wheel.WheelSize)
	for _, r := range raw["rows"].([]any) {
		m := r.(map[string]any)
		for _, key := range []string{"scenario", "figure", "ours", "runtime", "ratio", "unit"} {
			assert.Contains(t, m, key)
		}
	}
	checkRows(t, rep.Rows)

	// The plot: a PNG with both panels side by side.
	f, err := os.Open(pngPath)
	require.NoError(t, err)
	defer f.Close()
	cfg, format, err := image.DecodeConfig(f)
	require.NoError(t, err)
	assert.Equal(t, "png", format)
	assert.Greater(t, cfg.Width, cfg.Height, "two panels side by side")
}

// checkRows checks that the tiny run's figures are all there and sane.
func checkRows(t *testing.T, rows []jsonRow) {
	t.Helper()
	byScenario := map[string]int{}
	fig := map[string]jsonRow{}
	for _, r := range rows {
		byScenario[r.Scenario]++
		fig[r.Scenario+"/"+r.Figure] = r
		require.NotNil(t, r.Ours, "%s %s", r.Scenario, r.Figure)
		if r.Scenario == "durable" {
			// Ours only: checked by TestDurableScenarioFigures.
			assert.Nil(t, r.Runtime, r.Figure)
			assert.Nil(t, r.Ratio, r.Figure)
			assert.NotEmpty(t, r.Unit)
			continue
		}
		require.NotNil(t, r.Runtime, "%s %s: every figure but durable's has a runtime value", r.Scenario, r.Figure)
		assert.GreaterOrEqual(t, *r.Ours, 0.0, "%s %s", r.Scenario, r.Figure)
		assert.GreaterOrEqual(t, *r.Runtime, 0.0, "%s %s", r.Scenario, r.Figure)
		if *r.Runtime > 0 {
			require.NotNil(t, r.Ratio, "%s %s", r.Scenario, r.Figure)
			assert.InDelta(t, *r.Ours / *r.Runtime, *r.Ratio, 1e-9)
		}
		assert.NotEmpty(t, r.Unit)
	}
	for _, name := range namesWithoutServers() {
		assert.Positive(t, byScenario[name], "rows of %s", name)
	}

	get := func(key string) jsonRow {
		t.Helper()
		r, ok := fig[key]
		require.True(t, ok, "figure %q missing", key)
		return r
	}
	positive := func(key string) {
		t.Helper()
		r := get(key)
		assert.Positive(t, *r.Ours, key)
		assert.Positive(t, *r.Runtime, key)
	}
	equal := func(key string, want float64) {
		t.Helper()
		r := get(key)
		assert.Equal(t, want, *r.Ours, key)
		assert.Equal(t, want, *r.Runtime, key)
	}

	for _, n := range []struct {
		label string
		n     float64
	}{{"N=2k", 2000}, {"N=4k", 4000}} {
		positive("startstop/start+stop " + n.label)
		positive("startstop/bytes " + n.label)
		positive("startstop/allocs " + n.label)
		equal("startstop/pending at start "+n.label, n.n)
		equal("startstop/pending at end "+n.label, n.n)
	}

	mem := get("memory/heap per pending timer N=2k")
	for _, v := range []float64{*mem.Ours, *mem.Runtime} {
		assert.Greater(t, v, 8.0, "a timer takes more than a pointer")
		assert.Less(t, v, 5000.0, "a timer takes less than 5 kB")
	}

	for _, ex := range []string{"inline", "goroutine"} {
		wall := get("fire/all fired after, window 100ms (" + ex + ")")
		assert.GreaterOrEqual(t, *wall.Ours, 0.099, "cannot all fire before the window ends")
		assert.GreaterOrEqual(t, *wall.Runtime, 0.099)
		positive("fire/expiries (" + ex + ")")
		var prev *jsonRow
		for _, p := range []string{"p50", "p99", "p999", "max"} {
			r := get("fire/lateness " + p + " (" + ex + ")")
			if prev != nil {
				assert.GreaterOrEqual(t, *r.Ours, *prev.Ours, p)
				assert.GreaterOrEqual(t, *r.Runtime, *prev.Runtime, p)
			}
			prev = &r
		}
		early := get("fire/early firings (" + ex + ")")
		assert.Zero(t, *early.Ours, "summed over the rounds: no timer fires early")
		assert.Zero(t, *early.Runtime)
		positive("fire/CPU (" + ex + ")")
	}

	idle := get("idle/CPU over 200ms idle, N=2k")
	assert.Less(t, *idle.Ours, 200.0*4, "idle CPU in ms cannot exceed the wall time times the cores")

	positive("parallel/start+stop, 1 goroutine, N=2k")
	positive("parallel/start+stop, 3 goroutines, N=2k")
	positive("parallel/scaling 3 vs 1 goroutines")
}

// TestEachScenarioAlone runs each scenario by its name and checks that
// only its rows come out.
func TestEachScenarioAlone(t *testing.T) {
	// asynq needs a Redis: TestAsynqScenarioOnRedis runs it alone.
	for _, name := range namesWithoutServers() {
		t.Run(name, func(t *testing.T) {
			stdout, _ := tinyRun(t, "-json", "-", name)
			var rep report
			require.NoError(t, json.Unmarshal([]byte(stdout), &rep), "with -json - stdout is only JSON")
			require.NotEmpty(t, rep.Rows)
			for _, r := range rep.Rows {
				assert.Equal(t, name, r.Scenario)
			}
		})
	}
}

// TestPlotSVG checks that a .svg plot is an SVG document.
func TestPlotSVG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "late.svg")
	day := time.Now().Format("2006-01-02")
	tinyRun(t, "-plot", path, "startstop", "fire")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	s := string(data)
	assert.True(t, strings.HasPrefix(s, "<?xml") || strings.Contains(s, "<svg"), "not an SVG: %.80q", s)
	assert.Contains(t, s, "</svg>")
	assert.Contains(t, s, "ns per start+stop (lower is better)")
	assert.Contains(t, s, "lateness (µs, log scale; lower is better)")
	assert.Contains(t, s, "fraction of timers fired by then (higher is better)")
	assert.Contains(t, s, "fire: 2k timers over 100ms, 3 rounds", "the samples of every round are drawn")
	assert.Contains(t, s, runtime.Version(), "the caption")
	if !strings.Contains(s, day) { // unless midnight passed meanwhile
		assert.Contains(t, s, time.Now().Format("2006-01-02"), "the caption")
	}
}

// TestPlotCaption checks that the caption names the machine, the Go
// version and the date.
func TestPlotCaption(t *testing.T) {
	c := plotCaption(time.Date(2026, 11, 24, 10, 30, 0, 0, time.UTC))
	assert.Contains(t, c, cpuModel())
	assert.Contains(t, c, strconv.Itoa(runtime.NumCPU())+" cores")
	assert.Contains(t, c, "GOMAXPROCS "+strconv.Itoa(runtime.GOMAXPROCS(0)))
	assert.Contains(t, c, runtime.Version())
	assert.Contains(t, c, "2026-11-24")
}

// TestPlotOnePanel draws the plot when only startstop ran.
func TestPlotOnePanel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ss.png")
	tinyRun(t, "-plot", path, "startstop")
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	cfg, _, err := image.DecodeConfig(f)
	require.NoError(t, err)
	assert.Less(t, cfg.Width, 2*cfg.Height, "one panel")
}
