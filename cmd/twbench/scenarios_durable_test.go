package main

import (
	"context"
	"encoding/json"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/internal/redistest"
)

// TestDurableScenarioFigures runs the durable scenario at the tiny size
// and checks that every figure is there, ours only, with a positive
// finite value and its unit, in the JSON and in the table.
func TestDurableScenarioFigures(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where the scenario makes its temp dir
	jsonPath := filepath.Join(t.TempDir(), "out.json")
	stdout, _ := tinyRun(t, "-json", jsonPath, "durable")
	data, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	var rep report
	require.NoError(t, json.Unmarshal(data, &rep))

	// -pending 2000: K is the floor, 100, and the window 100ms.
	lateOf := ", 8 consumers, K=100 over 100ms"
	want := map[string]string{
		"enqueue, 1 producer, K=100":                                 unitEnqueuesSec,
		"enqueue, 8 producers, K=100":                                unitEnqueuesSec,
		"enqueue, 64 producers, K=100":                               unitEnqueuesSec,
		"enqueue in batches of 100, 8 producers, K=100":              unitEnqueuesSec,
		"receive+ack, 8 consumers, K=100":                            unitAcksSec,
		"jobs worked with Run, 8 workers, K=100 (median of -rounds)": unitJobsSec,
		"jobs worked with Run through a Mux, 2 kinds, JSON payloads, 8 workers, K=100 (median of -rounds)": unitJobsSec,
		"lateness p50" + lateOf:                                unitMillis,
		"lateness p99" + lateOf:                                unitMillis,
		"lateness max" + lateOf:                                unitMillis,
		"received before due" + lateOf:                         unitCount,
		"reopen: open+stats+close, N=2k pending (median of 3)": unitMillis,
		"heap held by the open queue, N=2k pending":            unitMiB,
		"process heap after open, N=2k pending":                unitMiB,
		"process RSS anon after open, N=2k pending":            unitMiB,
		"process RSS file after open, N=2k pending":            unitMiB,
		"file size, N=2k pending":                              unitMiB,
	}
	fig := map[string]float64{}
	shown := map[string]string{} // the unit of each figure in the table
	for _, r := range rep.Rows {
		assert.Equal(t, "durable", r.Scenario)
		require.NotNil(t, r.Ours, "%s: a finite value", r.Figure)
		assert.Nil(t, r.Runtime, "%s: ours only", r.Figure)
		assert.Nil(t, r.Ratio, "%s: ours only", r.Figure)
		unit, ok := want[r.Figure]
		if assert.True(t, ok, "unexpected figure %q", r.Figure) {
			assert.Equal(t, unit, r.Unit, r.Figure)
		}
		v := *r.Ours
		assert.False(t, math.IsNaN(v) || math.IsInf(v, 0), r.Figure)
		if strings.HasPrefix(r.Figure, "received before due") {
			assert.Zero(t, v, r.Figure)
		} else {
			assert.Positive(t, v, r.Figure)
		}
		fig[r.Figure] = v
		_, shown[r.Figure] = displayUnit(row{Ours: v, Runtime: r.Runtime, Unit: r.Unit}) // a small time moves to a smaller unit
	}
	require.Len(t, fig, len(want), "figures: %v", fig)
	assert.LessOrEqual(t, fig["lateness p50"+lateOf], fig["lateness p99"+lateOf])
	assert.LessOrEqual(t, fig["lateness p99"+lateOf], fig["lateness max"+lateOf])
	assert.GreaterOrEqual(t, fig["process heap after open, N=2k pending"], fig["heap held by the open queue, N=2k pending"])

	// The table shows - for the runtime and the ratio.
	for figure := range want {
		line := tableLine(t, stdout, figure)
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "durable"))
		require.GreaterOrEqual(t, len(f), 4, line)
		assert.Equal(t, []string{"-", "-", shown[figure]}, f[len(f)-3:], line)
	}

	// The temp dir is gone.
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, left, "the scenario's temp dir is removed")
}

// tableLine returns the line of the table that shows figure.
func tableLine(t *testing.T, table, figure string) string {
	t.Helper()
	for line := range strings.Lines(table) {
		if strings.Contains(line, " "+figure+" ") {
			return line
		}
	}
	t.Fatalf("no line for %q in\n%s", figure, table)
	return ""
}

// TestDurableSizes checks the counts and the window derived from the
// flags, as the help describes them.
func TestDurableSizes(t *testing.T) {
	for pending, want := range map[int]int{2000: 100, 20_000: 100, 500_000: 2500, 1_000_000: 5000, 100_000_000: 20_000} {
		o := defaultOptions()
		o.pending = pending
		assert.Equal(t, want, durableCount(o), "pending %d", pending)
		assert.Equal(t, min(want, 2000), durableLateCount(o), "pending %d", pending)
	}
	o := defaultOptions()
	assert.Equal(t, 2*time.Second, durableWindow(o))
	o.window = 100 * time.Millisecond
	assert.Equal(t, 100*time.Millisecond, durableWindow(o))
	o.window = time.Minute
	assert.Equal(t, 2*time.Second, durableWindow(o))
}

// TestParseArgsStore checks the values -store accepts and refuses.
func TestParseArgsStore(t *testing.T) {
	o, err := parseArgs(nil)
	require.NoError(t, err)
	assert.Equal(t, storeBolt, o.store, "bolt by default")
	o, err = parseArgs([]string{"durable", "-store", "bolt"})
	require.NoError(t, err)
	assert.Equal(t, storeBolt, o.store)

	for _, url := range []string{"redis://localhost:6379/0", "rediss://user:pw@example.com:6380",
		"postgres:///postgres?host=/tmp&user=postgres", "postgresql://app:pw@db.example.com:5433/app?sslmode=disable&pool_max_conns=4",
		"mysql://root@/?socket=/run/mysqld/mysqld.sock", "mysql://app:pw@db.example.com:3307/app?tls=skip-verify"} {
		o, err := parseArgs([]string{"durable", "-store", url})
		require.NoError(t, err, url)
		assert.Equal(t, url, o.store)
	}
	_, err = parseArgs([]string{"durable", "-store", "redis://localhost:6379/notadb"})
	require.ErrorContains(t, err, "-store: ")
	for _, bad := range []string{"", "Bolt", "mysql", "redis:/localhost", "/tmp/x.db"} {
		_, err := parseArgs([]string{"-store", bad})
		var ue *usageError
		require.ErrorAs(t, err, &ue, "%q", bad)
		assert.Contains(t, err.Error(), "-store must be bolt, postgres, a redis:// URL, a postgres:// URL or a mysql:// URL", bad)
	}
	for _, bad := range []string{"mysql:///app", "mysql://app@db.example.com/?tls=nosuchconfig"} {
		_, err := parseArgs([]string{"durable", "-store", bad})
		var ue *usageError
		require.ErrorAs(t, err, &ue, "%q", bad)
		assert.Contains(t, err.Error(), "-store: ", bad)
	}
}

// TestDurableOnRedis runs the durable scenario, tiny, against a real
// redis-server of its own, and checks that it leaves no key behind.
func TestDurableOnRedis(t *testing.T) {
	addr := startRedis(t)
	figures := durableOnStore(t, "redis://"+addr)
	assert.Positive(t, figures["Redis used_memory, N=2k pending"])

	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	keys, err := client.Keys(context.Background(), "tw:*").Result()
	require.NoError(t, err)
	assert.Empty(t, keys, "the run left its queues in Redis")
}

// durableOnStore runs the durable scenario, tiny, on store (-store), and
// returns its figures, checking those that every store has.
func durableOnStore(t *testing.T, store string) map[string]float64 {
	t.Helper()
	return durableOnStoreRows(t, store, 17)
}

// durableOnStoreRows is durableOnStore for a store whose run has n
// figures.
func durableOnStoreRows(t *testing.T, store string, n int) map[string]float64 {
	t.Helper()
	jsonPath := filepath.Join(t.TempDir(), "out.json")
	tinyRun(t, "-json", jsonPath, "-store", store, "durable")
	data, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	var rep report
	require.NoError(t, json.Unmarshal(data, &rep))
	figures := map[string]float64{}
	for _, r := range rep.Rows {
		require.NotNil(t, r.Ours, r.Figure)
		figures[r.Figure] = *r.Ours
	}
	assert.Len(t, figures, n)
	assert.Positive(t, figures["enqueue in batches of 100, 8 producers, K=100"])
	assert.Positive(t, figures["enqueue, 64 producers, K=100"])
	assert.Positive(t, figures["receive+ack, 8 consumers, K=100"])
	assert.Positive(t, figures["jobs worked with Run through a Mux, 2 kinds, JSON payloads, 8 workers, K=100 (median of -rounds)"])
	assert.Zero(t, figures["received before due, 8 consumers, K=100 over 100ms"])
	return figures
}

// startRedis starts a redis-server on a free loopback port for the test,
// or skips it if there is no redis-server, unless REQUIRE_REDIS=1.
func startRedis(t *testing.T) string {
	t.Helper()
	bin := redistest.Binary(t, "redis-server")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	require.NoError(t, l.Close())
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir())
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	require.Eventually(t, func() bool { return client.Ping(context.Background()).Err() == nil },
		10*time.Second, 10*time.Millisecond, "redis-server did not start")
	return addr
}

// TestCheckMemoryIgnoresDurable checks that durable's messages, kept on
// disk, do not count in the memory check.
func TestCheckMemoryIgnoresDurable(t *testing.T) {
	o, err := parseArgs([]string{"durable", "-pending", "100G"})
	require.NoError(t, err)
	assert.NoError(t, checkMemoryAgainst(o, 1<<20))
}

// TestOpenDurable checks that openDurable opens the same store again on
// the same dir, and that closing releases it.
func TestOpenDurable(t *testing.T) {
	o := defaultOptions()
	dir := t.TempDir()
	ctx := context.Background()
	q, closeAll, err := openDurable(o, dir)
	require.NoError(t, err)
	require.NoError(t, q.Enqueue(ctx, durable.Message{ID: "a", Payload: []byte("x"), Due: time.Now().Add(time.Hour)}))
	require.NoError(t, closeAll())
	_, err = q.Stats(ctx)
	assert.ErrorIs(t, err, durable.ErrClosed)

	q, closeAll, err = openDurable(o, dir)
	require.NoError(t, err)
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, st.Pending)
	require.NoError(t, closeAll())
	size, err := durableStoreBytes(o, dir)
	require.NoError(t, err)
	assert.Positive(t, size)
}
