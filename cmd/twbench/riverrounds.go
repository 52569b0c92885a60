package main

import (
	"context"
	"fmt"
)

// riverRates are the rates of one round of the river scenario, and the
// statements and store calls per message behind them. On a shared
// machine a rate measured once moves by a fifth from one moment to the
// next, ours and River's apart; so the scenario measures them in -rounds
// rounds, ours and River's side by side in each, and reports the median
// of each figure.
type riverRates struct {
	oursOne, theirOne                  float64 // enqueues/s, one message a call
	oursMany, oursQueueMany, theirMany float64 // enqueues/s, batches: EnqueueTx, Queue.Enqueue; InsertMany
	oursRun, theirRun                  float64 // jobs worked/s; River with its fastest fetching

	// Statements per message of each rate above.
	oursOneSQL, theirOneSQL                     float64
	oursManySQL, oursQueueManySQL, theirManySQL float64
	oursRunSQL, theirRunSQL                     float64

	// Our store calls per job worked.
	claims, confirms, acks, others float64

	// The server's commits and WAL syncs (fsyncs) per job worked.
	oursRunCommits, theirRunCommits float64
	oursRunSyncs, theirRunSyncs     float64
}

// String gives the rates and ratios of the round, for stderr.
func (r riverRates) String() string {
	return fmt.Sprintf("enqueue one at a time %.0f/s vs %.0f/s (%.2fx), batches EnqueueTx %.0f/s and Queue.Enqueue %.0f/s vs %.0f/s (%.2fx, %.2fx), jobs worked %.0f/s vs %.0f/s (%.2fx)",
		r.oursOne, r.theirOne, r.oursOne/r.theirOne,
		r.oursMany, r.oursQueueMany, r.theirMany, r.oursMany/r.theirMany, r.oursQueueMany/r.theirMany,
		r.oursRun, r.theirRun, r.oursRun/r.theirRun)
}

// measureRiverRates measures round r of the rates, k messages each, in
// queues of their own, side by side (see sideBySide).
func measureRiverRates(o *options, b *riverBench, root string, r, k int, m *pgMeter) (rr riverRates, err error) {
	ctx := context.Background()
	name := func(s string) string { return fmt.Sprintf("%s_%d", s, r) }
	dir := func(s string) string { return fmt.Sprintf("%s/%s-%d", root, s, r) }
	var ours, theirs []func() error
	ours = append(ours, func() (err error) {
		var one, many, queueMany int64
		if rr.oursOne, one, err = durableEnqueue(o, dir("enqueue"), riverWorkers, k, 1, m); err != nil {
			return fmt.Errorf("ours, enqueue: %w", err)
		}
		if rr.oursMany, many, err = pgBatchEnqueue(o, dir("batch"), riverWorkers, k, riverBatch, m); err != nil {
			return fmt.Errorf("ours, EnqueueTx: %w", err)
		}
		if rr.oursQueueMany, queueMany, err = durableEnqueue(o, dir("queuebatch"), riverWorkers, k, riverBatch, m); err != nil {
			return fmt.Errorf("ours, Queue.Enqueue of a batch: %w", err)
		}
		rr.oursOneSQL, rr.oursManySQL, rr.oursQueueManySQL = perMsg(one, k), perMsg(many, k), perMsg(queueMany, k)
		return nil
	})
	theirs = append(theirs, func() (err error) {
		var one, many int64
		if rr.theirOne, one, err = b.insertRate(ctx, name("enqueue"), riverWorkers, k, 1, m); err != nil {
			return fmt.Errorf("river, insert: %w", err)
		}
		if rr.theirMany, many, err = b.insertRate(ctx, name("batch"), riverWorkers, k, riverBatch, m); err != nil {
			return fmt.Errorf("river, InsertMany: %w", err)
		}
		rr.theirOneSQL, rr.theirManySQL = perMsg(one, k), perMsg(many, k)
		return nil
	})
	ours = append(ours, func() error {
		rate, statements, calls, err := pgWorked(o, dir("worked"), k, m)
		if err != nil {
			return fmt.Errorf("ours, worked: %w", err)
		}
		rr.oursRun, rr.oursRunSQL = rate, perMsg(statements, k)
		rr.oursRunCommits, rr.oursRunSyncs = perMsg(m.last().commits, k), perMsg(m.last().syncs, k)
		rr.claims, rr.confirms, rr.acks, rr.others = perMsg(calls.claims, k), perMsg(calls.confirms, k), perMsg(calls.acks, k), perMsg(calls.others, k)
		return nil
	})
	theirs = append(theirs, func() error {
		giveUp, cancel := context.WithTimeout(ctx, durableGiveUp)
		defer cancel()
		rate, statements, err := b.workRate(giveUp, name("worked_fast"), riverWorkers, k, riverTuned, m)
		if err != nil {
			return fmt.Errorf("river, worked_fast: %w", err)
		}
		rr.theirRun, rr.theirRunSQL = rate, perMsg(statements, k)
		rr.theirRunCommits, rr.theirRunSyncs = perMsg(m.last().commits, k), perMsg(m.last().syncs, k)
		return nil
	})
	err = sideBySide(r, ours, theirs) // before the return reads rr, which it fills
	return rr, err
}
