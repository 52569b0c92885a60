package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/seed64e23a5c/timingwheel/internal/durablebench"
)

// init registers the asynq scenario.
func init() {
	register(scenario{
		name:       "asynq",
		order:      80,
		needsRedis: true,
		help: "the durable queue on the Redis of -store (redis:// only; left out of all otherwise) vs hibiken/asynq on the same server, " +
			"in the runtime column, 100-byte payloads, K=-pending/50 messages (100 to 20k): enqueues/s from 8 producers, due in an hour, one at a time and ours in batches of 100 (asynq has no batch enqueue: against its one at a time); " +
			"receive+acks/s with 8 workers (durable's Run, asynq's Server), due already; Redis commands per message of both " +
			"(INFO commandstats, script calls included); these rates and commands are the medians of -rounds rounds; lateness p50/p99 and early deliveries with 8 consumers, min(K, 2000) messages over min(2s, -window), " +
			"against asynq with its default polls (DelayedTaskCheckInterval 5s, TaskCheckInterval 1s) and with both at 100ms; every key it makes is deleted afterwards",
		timers: func(*options) int { return 0 }, // the messages are in Redis
		run:    runAsynq,
	})
}

// Units that only the asynq scenario uses.
const unitCommandsMsg = "commands/msg"

// asynqWorkers is the concurrency of both sides: producers, workers,
// consumers.
const asynqWorkers = 8

// asynqFastPoll is the tuned setting of asynq's polling intervals in
// the second lateness comparison.
const asynqFastPoll = 100 * time.Millisecond

// asynqCount is the number of messages of the enqueue and receive+ack
// figures: -pending/50, between 100 and 20k (20k at the default -pending).
func asynqCount(o *options) int { return min(max(o.pending/50, 100), 20_000) }

// asynqLateCount is the number of messages of the lateness figures.
func asynqLateCount(o *options) int { return min(asynqCount(o), 2000) }

// runAsynq measures the durable queue on Redis and asynq on the same
// server, each figure in queues of its own that are deleted at the end:
// the rates side by side in -rounds rounds (see asynqRates), the lateness
// once, ours first.
func runAsynq(e *env) (rows []row, err error) {
	o := e.opts
	if !isRedisURL(o.store) {
		return nil, errors.New(asynqNeedsRedis)
	}
	root, err := os.MkdirTemp("", "twbench-asynq-")
	if err != nil {
		return nil, err
	}
	// Ours keeps nothing in the dirs: they only name its queues.
	defer func() { err = errors.Join(err, os.RemoveAll(root), dropRedisQueues(o, root)) }()
	b, err := newAsynqBench(o, "twbench:"+filepath.Base(root))
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, b.drop(context.Background())) }()
	meter := newRedisMeter(b.client)
	ctx := context.Background()

	k := asynqCount(o)
	ks := "K=" + formatCount(k)
	const vs = " (vs asynq)"
	// The rates, in -rounds rounds (see asynqRates); each figure is the
	// median of its rounds.
	rs, err := inRounds(e, "asynq", func(r int) (asynqRates, error) { return measureAsynqRates(o, b, root, r, k, meter) })
	if err != nil {
		return nil, err
	}
	pair := func(figure, unit string, ours, theirs func(asynqRates) float64) row {
		return bothMedians(rs, figure, unit, ours, theirs)
	}
	theirEnq := func(r asynqRates) float64 { return r.theirOne }
	theirEnqCmds := func(r asynqRates) float64 { return r.theirOneCmds }
	enqOf := fmt.Sprintf(", %d producers, %s", asynqWorkers, ks)
	// asynq has no batch enqueue: its line is the one at a time.
	batchOf := fmt.Sprintf(" in batches of %d", durableBatch)
	const vsOne = " (vs asynq one at a time)"
	runOf := fmt.Sprintf(", %d workers, %s", asynqWorkers, ks)
	rows = append(rows,
		pair("enqueue"+enqOf+", due in 1h"+vs, unitEnqueuesSec, func(r asynqRates) float64 { return r.oursOne }, theirEnq),
		pair("Redis commands per enqueue"+enqOf+vs, unitCommandsMsg, func(r asynqRates) float64 { return r.oursOneCmds }, theirEnqCmds),
		pair("enqueue"+batchOf+enqOf+", due in 1h"+vsOne, unitEnqueuesSec, func(r asynqRates) float64 { return r.oursBatch }, theirEnq),
		pair("Redis commands per enqueue"+batchOf+enqOf+vsOne, unitCommandsMsg, func(r asynqRates) float64 { return r.oursBatchCmds }, theirEnqCmds),
		pair("receive+ack"+runOf+", due already"+vs, unitAcksSec,
			func(r asynqRates) float64 { return r.oursRun }, func(r asynqRates) float64 { return r.theirRun }),
		pair("Redis commands per receive+ack"+runOf+vs, unitCommandsMsg,
			func(r asynqRates) float64 { return r.oursRunCmds }, func(r asynqRates) float64 { return r.theirRunCmds }))

	lk, win := asynqLateCount(o), durableWindow(o)
	ours, err := durableLateness(o, filepath.Join(root, "lateness"), lk, win)
	if err != nil {
		return nil, fmt.Errorf("ours, lateness: %w", err)
	}
	lateOf := fmt.Sprintf(", K=%s over %v", formatCount(lk), win)
	for _, v := range []struct {
		name, label string
		poll        time.Duration
	}{
		{"lateness-default", " (vs asynq, default polls)", 0},
		{"lateness-fast", fmt.Sprintf(" (vs asynq, %v polls)", asynqFastPoll), asynqFastPoll},
	} {
		giveUp, cancel := context.WithTimeout(ctx, win+durableGiveUp)
		theirs, err := b.lateness(giveUp, v.name, asynqWorkers, lk, win, v.poll)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("asynq, %s: %w", v.name, err)
		}
		p := func(late []time.Duration, q float64) float64 { return millis(durablebench.Percentile(late, q)) }
		rows = append(rows,
			both("lateness p50"+lateOf+v.label, unitMillis, p(ours, 0.50), p(theirs, 0.50)),
			both("lateness p99"+lateOf+v.label, unitMillis, p(ours, 0.99), p(theirs, 0.99)),
			// durablebench.Lateness fails on a message received early.
			both("received before due"+lateOf+v.label, unitCount, 0, float64(countEarly(theirs))))
	}
	return rows, nil
}

// asynqNeedsRedis is the error for the asynq scenario without a Redis.
const asynqNeedsRedis = "scenario asynq compares with asynq on a Redis server: it needs -store redis://host:port"

// perMsg returns commands per message.
func perMsg(commands int64, k int) float64 { return float64(commands) / float64(k) }

// countEarly returns how many of the sorted latenesses are negative.
func countEarly(sorted []time.Duration) int {
	n := 0
	for n < len(sorted) && sorted[n] < 0 {
		n++
	}
	return n
}
