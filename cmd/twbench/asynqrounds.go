package main

import (
	"context"
	"fmt"
	"path/filepath"
)

// asynqRates are the rates of one round of the asynq scenario, and the
// Redis commands per message behind them: as the river scenario does (see
// riverRates), it measures them in -rounds rounds, ours and asynq's side
// by side in each, and reports the median of each figure.
type asynqRates struct {
	oursOne, theirOne, oursBatch float64 // enqueues/s: one message a call, ours in batches
	oursRun, theirRun            float64 // receive+acks/s

	// Redis commands per message of each rate above.
	oursOneCmds, theirOneCmds, oursBatchCmds float64
	oursRunCmds, theirRunCmds                float64
}

// String gives the rates and ratios of the round, for stderr.
func (r asynqRates) String() string {
	return fmt.Sprintf("enqueue one at a time %.0f/s vs %.0f/s (%.2fx), in batches %.0f/s (%.2fx), receive+ack %.0f/s vs %.0f/s (%.2fx)",
		r.oursOne, r.theirOne, r.oursOne/r.theirOne, r.oursBatch, r.oursBatch/r.theirOne,
		r.oursRun, r.theirRun, r.oursRun/r.theirRun)
}

// measureAsynqRates measures round r of the rates, k messages each, in
// queues of their own, side by side (see sideBySide).
func measureAsynqRates(o *options, b *asynqBench, root string, r, k int, meter *redisMeter) (ar asynqRates, err error) {
	ctx := context.Background()
	dir := func(s string) string { return filepath.Join(root, fmt.Sprintf("%s-%d", s, r)) }
	ours := []func() error{
		func() (err error) {
			var one, batch int64
			if ar.oursOne, one, err = durableEnqueue(o, dir("enqueue"), asynqWorkers, k, 1, meter); err != nil {
				return fmt.Errorf("ours, enqueue: %w", err)
			}
			if ar.oursBatch, batch, err = durableEnqueue(o, dir("batches"), asynqWorkers, k, durableBatch, meter); err != nil {
				return fmt.Errorf("ours, enqueue in batches: %w", err)
			}
			ar.oursOneCmds, ar.oursBatchCmds = perMsg(one, k), perMsg(batch, k)
			return nil
		},
		func() error {
			rate, commands, err := durableReceiveAck(o, dir("receive"), k, runRate, meter)
			if err != nil {
				return fmt.Errorf("ours, receive+ack: %w", err)
			}
			ar.oursRun, ar.oursRunCmds = rate, perMsg(commands, k)
			return nil
		},
	}
	theirs := []func() error{
		func() error {
			rate, commands, err := b.enqueueRate(ctx, fmt.Sprintf("enqueue-%d", r), asynqWorkers, k, durablePayload)
			if err != nil {
				return fmt.Errorf("asynq, enqueue: %w", err)
			}
			ar.theirOne, ar.theirOneCmds = rate, perMsg(commands, k)
			return nil
		},
		func() error {
			giveUp, cancel := context.WithTimeout(ctx, durableGiveUp)
			defer cancel()
			rate, commands, err := b.runRate(giveUp, fmt.Sprintf("receive-%d", r), asynqWorkers, k, durablePayload)
			if err != nil {
				return fmt.Errorf("asynq, receive+ack: %w", err)
			}
			ar.theirRun, ar.theirRunCmds = rate, perMsg(commands, k)
			return nil
		},
	}
	err = sideBySide(r, ours, theirs) // before the return reads ar, which it fills
	return ar, err
}
