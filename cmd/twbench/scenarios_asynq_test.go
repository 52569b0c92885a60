package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// namesWithoutServers returns the scenarios that "all" runs with the
// default -store: every one but those that need a Redis or a PostgreSQL.
func namesWithoutServers() []string {
	return namesWhere(func(s scenario) bool { return !s.needsRedis && !s.needsPostgres })
}

// namesWhere returns the names of the registered scenarios that keep
// keeps, in order.
func namesWhere(keep func(scenario) bool) []string {
	var names []string
	for _, s := range registry {
		if keep(s) {
			names = append(names, s.name)
		}
	}
	return names
}

// TestAsynqScenarioOnRedis runs the asynq scenario, tiny, against a real
// redis-server of its own, and checks that every figure is there with
// both values, sane, and that it leaves no key behind.
func TestAsynqScenarioOnRedis(t *testing.T) {
	addr := startRedis(t)
	jsonPath := filepath.Join(t.TempDir(), "out.json")
	stdout, stderr := tinyRun(t, "-json", jsonPath, "-rounds", "2", "-store", "redis://"+addr, "asynq")
	data, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	var rep report
	require.NoError(t, json.Unmarshal(data, &rep))

	// -pending 2000: K is the floor, 100, and the window 100ms.
	const def, fast = " (vs asynq, default polls)", " (vs asynq, 100ms polls)"
	lateOf := ", K=100 over 100ms"
	want := map[string]string{
		"enqueue, 8 producers, K=100, due in 1h (vs asynq)":                                         unitEnqueuesSec,
		"Redis commands per enqueue, 8 producers, K=100 (vs asynq)":                                 unitCommandsMsg,
		"enqueue in batches of 100, 8 producers, K=100, due in 1h (vs asynq one at a time)":         unitEnqueuesSec,
		"Redis commands per enqueue in batches of 100, 8 producers, K=100 (vs asynq one at a time)": unitCommandsMsg,
		"receive+ack, 8 workers, K=100, due already (vs asynq)":                                     unitAcksSec,
		"Redis commands per receive+ack, 8 workers, K=100 (vs asynq)":                               unitCommandsMsg,
		"lateness p50" + lateOf + def:                                                               unitMillis,
		"lateness p99" + lateOf + def:                                                               unitMillis,
		"received before due" + lateOf + def:                                                        unitCount,
		"lateness p50" + lateOf + fast:                                                              unitMillis,
		"lateness p99" + lateOf + fast:                                                              unitMillis,
		"received before due" + lateOf + fast:                                                       unitCount,
	}
	ours, theirs := map[string]float64{}, map[string]float64{}
	for _, r := range rep.Rows {
		assert.Equal(t, "asynq", r.Scenario)
		require.NotNil(t, r.Ours, r.Figure)
		require.NotNil(t, r.Runtime, "%s: asynq's value", r.Figure)
		unit, ok := want[r.Figure]
		if assert.True(t, ok, "unexpected figure %q", r.Figure) {
			assert.Equal(t, unit, r.Unit, r.Figure)
		}
		ours[r.Figure], theirs[r.Figure] = *r.Ours, *r.Runtime
	}
	require.Len(t, ours, len(want), "figures: %v", ours)

	for figure, unit := range want {
		switch unit {
		case unitEnqueuesSec, unitAcksSec:
			assert.Positive(t, ours[figure], figure)
			assert.Positive(t, theirs[figure], figure)
		case unitCommandsMsg:
			// The meter counts the work and not more: asynq runs at
			// least one command per message, ours (which sends the
			// calls made at once in one script) at least one per batch
			// of a hundred; fewer than a hundred a message each.
			assert.GreaterOrEqual(t, theirs[figure], 1.0, figure)
			assert.GreaterOrEqual(t, ours[figure], 0.01, figure)
			for _, v := range []float64{ours[figure], theirs[figure]} {
				assert.Less(t, v, 100.0, figure)
			}
		}
	}
	for _, vs := range []string{def, fast} {
		assert.Zero(t, ours["received before due"+lateOf+vs], "ours never delivers early")
		assert.GreaterOrEqual(t, ours["lateness p50"+lateOf+vs], 0.0)
		assert.LessOrEqual(t, ours["lateness p50"+lateOf+vs], ours["lateness p99"+lateOf+vs])
		assert.LessOrEqual(t, theirs["lateness p50"+lateOf+vs], theirs["lateness p99"+lateOf+vs])
		early := theirs["received before due"+lateOf+vs]
		assert.GreaterOrEqual(t, early, 0.0)
		assert.LessOrEqual(t, early, 100.0)
	}
	// asynq's forwarder first runs 5s after its server starts, and the
	// tasks are all due within a second of that start.
	assert.Greater(t, theirs["lateness p50"+lateOf+def], 3000.0, "asynq with default polls")
	assert.Zero(t, theirs["received before due"+lateOf+def])

	// Each round's rates go to stderr, and the table has their medians
	// (of two rounds: their mean).
	assert.NotContains(t, stderr, "round 3")
	oursMean, theirMean := meanOfTwoRounds(t, stderr, `twbench: asynq round \d of 2: .* receive\+ack (\d+)/s vs (\d+)/s`)
	runRow := "receive+ack, 8 workers, K=100, due already (vs asynq)"
	assert.InDelta(t, oursMean, ours[runRow], 1, "ours: the median of the rounds")
	assert.InDelta(t, theirMean, theirs[runRow], 1, "asynq's: the median of the rounds")

	// The table shows asynq's values in the runtime column.
	line := tableLine(t, stdout, "enqueue, 8 producers, K=100, due in 1h (vs asynq)")
	f := strings.Fields(line)
	assert.Equal(t, unitEnqueuesSec, f[len(f)-1], line)
	assert.Regexp(t, `x$`, f[len(f)-2], "a ratio: %s", line)

	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	keys, err := client.Keys(context.Background(), "*").Result()
	require.NoError(t, err)
	assert.Empty(t, keys, "the run left keys in Redis")
}

// TestAsynqNeedsRedis checks that the asynq scenario, named without a
// redis:// -store, is refused on one line before anything runs, and that
// all leaves it out then but runs it with a Redis.
func TestAsynqNeedsRedis(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 2, run([]string{"asynq"}, &stdout, &stderr))
	assert.Empty(t, stdout.String())
	assert.Equal(t, "twbench: "+asynqNeedsRedis+"\n"+usageHint+"\n", stderr.String())

	o, err := parseArgs([]string{"all"})
	require.NoError(t, err)
	assert.False(t, o.has("asynq"))
	o, err = parseArgs([]string{"all", "-store", "redis://localhost:6379"})
	require.NoError(t, err)
	assert.True(t, o.has("asynq"))
	assert.Equal(t, namesWhere(func(s scenario) bool { return !s.needsPostgres }), namesOf(o.scenarios),
		"all with a Redis: every scenario but those that need a PostgreSQL")
}

// TestAsynqCounts checks the sizes derived from -pending, as the help
// describes them.
func TestAsynqCounts(t *testing.T) {
	for pending, want := range map[int]int{2000: 100, 100_000: 2000, 500_000: 10_000, 1_000_000: 20_000, 100_000_000: 20_000} {
		o := defaultOptions()
		o.pending = pending
		assert.Equal(t, want, asynqCount(o), "pending %d", pending)
		assert.Equal(t, min(want, 2000), asynqLateCount(o), "pending %d", pending)
	}
}

// TestSumCommandCalls checks the sum of an INFO commandstats reply: every
// command's calls but INFO's, and an error on a reply without them.
func TestSumCommandCalls(t *testing.T) {
	info := "# Commandstats\r\n" +
		"cmdstat_get:calls=3,usec=2,usec_per_call=0.67,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_info:calls=40,usec=900,usec_per_call=22.50,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_config|resetstat:calls=1,usec=52,usec_per_call=52.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_evalsha:calls=10,usec=86,usec_per_call=8.60,rejected_calls=2,failed_calls=1\r\n"
	n, err := sumCommandCalls(info)
	require.NoError(t, err)
	assert.Equal(t, int64(14), n)

	_, err = sumCommandCalls("# Commandstats\r\n")
	assert.ErrorContains(t, err, "no cmdstat_ line")
	_, err = sumCommandCalls("cmdstat_get:usec=2\r\n")
	assert.ErrorContains(t, err, "no calls=")
}

// TestRedisMeter checks the meter against a real Redis: it counts the
// commands sent between start and stop, Lua's calls included, less own.
func TestRedisMeter(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: startRedis(t)})
	defer client.Close()
	ctx := context.Background()
	m := newRedisMeter(client)
	require.NoError(t, m.start(ctx))
	require.NoError(t, client.Set(ctx, "a", "1", 0).Err())
	require.NoError(t, client.Eval(ctx, "redis.call('incr', KEYS[1]); return redis.call('get', KEYS[1])", []string{"b"}).Err())
	require.NoError(t, client.Get(ctx, "a").Err())
	n, err := m.stop(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, int64(4), n, "set, eval with its incr and get; the last get is own")
}

// TestRatioOfNegatives checks that a row with a negative value (a
// lateness of a message delivered early) has no ratio.
func TestRatioOfNegatives(t *testing.T) {
	_, ok := both("x", unitMillis, 2, -3).ratio()
	assert.False(t, ok)
	_, ok = both("x", unitMillis, -2, 3).ratio()
	assert.False(t, ok)
	q, ok := both("x", unitMillis, 2, 4).ratio()
	assert.True(t, ok)
	assert.Equal(t, 0.5, q)
}

// TestCheckStoreForAsynq checks that the asynq scenario, like durable,
// has its Redis checked before anything runs.
func TestCheckStoreForAsynq(t *testing.T) {
	o, err := parseArgs([]string{"asynq", "-store", "redis://" + silentServer(t)})
	require.NoError(t, err)
	err = checkStore(o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no answer to PING within 1.5s")

	o, err = parseArgs([]string{"asynq", "-store", "redis://" + startRedis(t)})
	require.NoError(t, err)
	assert.NoError(t, checkStore(o))
}
