package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/internal/durablebench"
)

// init registers the river scenario.
func init() {
	register(scenario{
		name:          "river",
		order:         90,
		needsPostgres: true,
		help: "the durable queue on the PostgreSQL of -store (durable/pgstore; postgres:// only, left out of all otherwise) vs " +
			"riverqueue/river v0.51.2 (pgx driver) on the same server, in the runtime column, both in a scratch database dropped afterwards, " +
			"each side on a pool of its own that it keeps for the run, as a service does, " +
			"100-byte payloads, K=-pending/50 jobs (100 to 20k): inserts/s from 8 producers, due in an hour, one at a time " +
			"(our Queue.Enqueue, River's Insert) and in batches of 100 (pgstore's EnqueueTx in a transaction, and Queue.Enqueue of 100 messages; River's InsertMany); " +
			"jobs worked/s with 8 workers, due already (durable's Run; a River client with MaxWorkers 8, until River reports them completed), " +
			"against River's default fetching (FetchCooldown 100ms, FetchPollInterval 1s: at most 8 jobs per 100ms, so on min(K, 800) jobs) " +
			"and its fastest (both at 1ms); SQL statements per message of each (BEGIN and COMMIT included, counted by a pgx tracer on the pools: " +
			"this process's statements only, River's background work included), and ours split by store method (Claim, Confirm, Ack, others); " +
			"these rates (River's default fetching aside), statements and calls are the medians of -rounds rounds; lateness p50/p99/max (medians of -rounds rounds, River's defaults once) and early starts (their sum) with 8 workers, " +
			"min(K, 2000) jobs over min(2s, -window), written in batches of 100 (ours: due vs when the handler starts; River: ScheduledAt " +
			"vs when Work starts), against River with default and fastest fetching",
		timers: func(*options) int { return 0 }, // the messages are in PostgreSQL
		run:    runRiver,
	})
}

// Units that only the river scenario uses.
const (
	unitStatementsMsg = "statements/msg"
	unitCallsMsg      = "calls/msg"
	unitJobsSec       = "jobs/s"
	unitCommitsMsg    = "commits/msg"
	unitFsyncsMsg     = "fsyncs/msg"
)

// riverWorkers is the concurrency of both sides: producers, workers.
const riverWorkers = 8

// riverBatch is the size of a batch of the batch figures.
const riverBatch = 100

// riverSlowCount is the most jobs River works with its default fetching
// in the jobs-worked figure: at its 80 jobs a second, 10 seconds.
const riverSlowCount = 800

// riverCount is the number of messages of the enqueue and jobs-worked
// figures: -pending/50, between 100 and 20k, as asynq's.
func riverCount(o *options) int { return asynqCount(o) }

// riverLateCount is the number of messages of the lateness figures.
func riverLateCount(o *options) int { return min(riverCount(o), 2000) }

// runRiver measures the durable queue on PostgreSQL (pgstore) and River
// on the same server, in a scratch database that it drops at the end,
// each figure in queues of its own: the rates side by side in -rounds
// rounds (see riverRates); River's default fetching once, after them;
// the lateness side by side in -rounds rounds too, against River's
// fastest fetching, and once against its defaults.
func runRiver(e *env) (rows []row, err error) {
	if !isPostgresURL(e.opts.store) {
		return nil, errors.New(needsPostgresError("river"))
	}
	scratch, err := newPgScratch(e.opts)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, scratch.drop()) }()
	m := &pgMeter{dsn: scratch.o.store}
	mo := *scratch.o
	mo.pgMeter = m
	mo.pgWarm = true
	o := &mo
	// Our queues are named after dirs (see runQueueName) that nothing
	// creates: pgstore keeps nothing in them.
	root := "/twbench-river/" + scratch.name
	ctx := context.Background()
	b, err := newRiverBench(ctx, o)
	if err != nil {
		return nil, err
	}
	defer b.close()
	// Our side keeps a pool for the run too (see options.pgPool).
	if o.pgPool, err = pgPool(ctx, o); err != nil {
		return nil, err
	}
	defer o.pgPool.Close()

	k := riverCount(o)
	ks := "K=" + formatCount(k)
	const vs = " (vs River)"

	// The rates, in -rounds rounds (see riverRates); each figure is the
	// median of its rounds.
	rs, err := inRounds(e, "river", func(r int) (riverRates, error) { return measureRiverRates(o, b, root, r, k, m) })
	if err != nil {
		return nil, err
	}
	med := func(f func(riverRates) float64) float64 { return medianOver(rs, f) }
	pair := func(figure, unit string, ours, theirs func(riverRates) float64) row {
		return bothMedians(rs, figure, unit, ours, theirs)
	}
	of := fmt.Sprintf(", %d producers, %s", riverWorkers, ks)
	batchOf := fmt.Sprintf(", batches of %d", riverBatch)
	rows = append(rows,
		pair("enqueue 1 at a time"+of+", due in 1h"+vs, unitEnqueuesSec,
			func(r riverRates) float64 { return r.oursOne }, func(r riverRates) float64 { return r.theirOne }),
		pair("enqueue"+batchOf+", EnqueueTx"+of+", due in 1h"+vs, unitEnqueuesSec,
			func(r riverRates) float64 { return r.oursMany }, func(r riverRates) float64 { return r.theirMany }),
		pair("enqueue"+batchOf+", Queue.Enqueue"+of+", due in 1h"+vs, unitEnqueuesSec,
			func(r riverRates) float64 { return r.oursQueueMany }, func(r riverRates) float64 { return r.theirMany }),
		pair("SQL statements per enqueue, 1 at a time"+of+vs, unitStatementsMsg,
			func(r riverRates) float64 { return r.oursOneSQL }, func(r riverRates) float64 { return r.theirOneSQL }),
		pair("SQL statements per enqueue"+batchOf+", EnqueueTx"+of+vs, unitStatementsMsg,
			func(r riverRates) float64 { return r.oursManySQL }, func(r riverRates) float64 { return r.theirManySQL }),
		pair("SQL statements per enqueue"+batchOf+", Queue.Enqueue"+of+vs, unitStatementsMsg,
			func(r riverRates) float64 { return r.oursQueueManySQL }, func(r riverRates) float64 { return r.theirManySQL }))

	// Jobs worked, due already: against River's fastest fetching in the
	// rounds, and once against its default fetching, which is slow.
	slow := min(k, riverSlowCount)
	giveUp, cancel := context.WithTimeout(ctx, durableGiveUp)
	theirSlow, theirSlowSQL, err := b.workRate(giveUp, "worked_default", riverWorkers, slow, riverDefaults, m)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("river, worked_default: %w", err)
	}
	oursRun := func(r riverRates) float64 { return r.oursRun }
	oursRunSQL := func(r riverRates) float64 { return r.oursRunSQL }
	def := fmt.Sprintf(" (vs River defaults, K=%s)", formatCount(slow))
	const fast = " (vs River 1ms fetch)"
	jobsOf := fmt.Sprintf("jobs worked, %d workers, %s", riverWorkers, ks)
	rows = append(rows,
		both(jobsOf+def, unitJobsSec, med(oursRun), theirSlow),
		both("SQL statements per job worked"+def, unitStatementsMsg, med(oursRunSQL), perMsg(theirSlowSQL, slow)),
		pair(jobsOf+fast, unitJobsSec, oursRun, func(r riverRates) float64 { return r.theirRun }),
		pair("SQL statements per job worked"+fast, unitStatementsMsg, oursRunSQL, func(r riverRates) float64 { return r.theirRunSQL }),
		pair("commits per job worked (the server's, all databases)"+fast, unitCommitsMsg,
			func(r riverRates) float64 { return r.oursRunCommits }, func(r riverRates) float64 { return r.theirRunCommits }),
		pair("WAL fsyncs per job worked (the server's)"+fast, unitFsyncsMsg,
			func(r riverRates) float64 { return r.oursRunSyncs }, func(r riverRates) float64 { return r.theirRunSyncs }))
	// Ours only: what the statements of a job worked do.
	rows = append(rows,
		oursOnly("store calls per job worked: Claim (ours, a round trip each: the claim and its plan setting)", unitCallsMsg, med(func(r riverRates) float64 { return r.claims })),
		oursOnly("store calls per job worked: Confirm (ours, concurrent ones share a statement)", unitCallsMsg, med(func(r riverRates) float64 { return r.confirms })),
		oursOnly("store calls per job worked: Ack (ours, concurrent ones share a statement)", unitCallsMsg, med(func(r riverRates) float64 { return r.acks })),
		oursOnly("store calls per job worked: Extend, Release, Retry, Expired (ours)", unitCallsMsg, med(func(r riverRates) float64 { return r.others })))

	// Lateness: ours and River's fastest side by side in rounds, River's
	// defaults once (each of its runs takes tens of seconds).
	lk, win := riverLateCount(o), durableWindow(o)
	lateOf := fmt.Sprintf(", %d workers, K=%s over %v", riverWorkers, formatCount(lk), win)
	theirLateness := func(queue string, fetch riverFetch) ([]time.Duration, error) {
		giveUp, cancel := context.WithTimeout(ctx, win+durableGiveUp)
		defer cancel()
		late, err := b.lateness(giveUp, queue, riverWorkers, lk, win, fetch)
		if err != nil {
			return nil, fmt.Errorf("river, %s: %w", queue, err)
		}
		return late, nil
	}
	lates, err := inRounds(e, "river lateness", func(r int) (lateRound, error) {
		var lr lateRound
		err := sideBySide(r, []func() error{func() (err error) {
			lr.ours, err = runLateness(o, fmt.Sprintf("%s/lateness/%d", root, r), riverWorkers, lk, win)
			if err != nil {
				err = fmt.Errorf("ours, lateness: %w", err)
			}
			return err
		}}, []func() error{func() (err error) {
			lr.theirs, err = theirLateness(fmt.Sprintf("lateness_fast_%d", r), riverTuned)
			return err
		}})
		return lr, err
	})
	if err != nil {
		return nil, err
	}
	defaults, err := theirLateness("lateness_default", riverDefaults)
	if err != nil {
		return nil, err
	}
	p := func(late []time.Duration, q float64) float64 { return millis(durablebench.Percentile(late, q)) }
	ours := func(f func([]time.Duration) float64) func(lateRound) float64 {
		return func(lr lateRound) float64 { return f(lr.ours) }
	}
	theirs := func(f func([]time.Duration) float64) func(lateRound) float64 {
		return func(lr lateRound) float64 { return f(lr.theirs) }
	}
	p50 := func(l []time.Duration) float64 { return p(l, 0.50) }
	p99 := func(l []time.Duration) float64 { return p(l, 0.99) }
	most := func(l []time.Duration) float64 { return millis(l[len(l)-1]) }
	early := func(l []time.Duration) float64 { return float64(countEarly(l)) }
	sum := func(f func(lateRound) float64) float64 {
		n := 0.0
		for _, lr := range lates {
			n += f(lr)
		}
		return n
	}
	const byDefault = " (vs River defaults)"
	rows = append(rows,
		both("lateness p50"+lateOf+byDefault, unitMillis, medianOver(lates, ours(p50)), p50(defaults)),
		both("lateness p99"+lateOf+byDefault, unitMillis, medianOver(lates, ours(p99)), p99(defaults)),
		both("lateness max"+lateOf+byDefault, unitMillis, medianOver(lates, ours(most)), most(defaults)),
		both("started before due"+lateOf+byDefault, unitCount, sum(ours(early)), early(defaults)))
	rows = append(rows,
		bothMedians(lates, "lateness p50"+lateOf+fast, unitMillis, ours(p50), theirs(p50)),
		bothMedians(lates, "lateness p99"+lateOf+fast, unitMillis, ours(p99), theirs(p99)),
		bothMedians(lates, "lateness max"+lateOf+fast, unitMillis, ours(most), theirs(most)),
		both("started before due"+lateOf+fast, unitCount, sum(ours(early)), sum(theirs(early))))
	return rows, nil
}

// lateRound is one round of the lateness figures: the lateness of each
// message, ours and River's (with its fastest fetching), sorted.
type lateRound struct{ ours, theirs []time.Duration }

func (lr lateRound) String() string {
	p := func(late []time.Duration, q float64) float64 { return millis(durablebench.Percentile(late, q)) }
	return fmt.Sprintf("lateness p50/p99 %.2f/%.2f ms vs %.2f/%.2f ms", p(lr.ours, 0.5), p(lr.ours, 0.99), p(lr.theirs, 0.5), p(lr.theirs, 0.99))
}

// pgWorked preloads a new pgstore queue of dir with k messages due now,
// and returns the jobs worked per second of Run with riverWorkers workers
// taking them all (durablebench.RunRate: until Run returns, every ack
// written), with the statements that took (counted by m) and the store
// calls, the preload left out; it checks that none is left.
func pgWorked(o *options, dir string, k int, m meter) (rate float64, statements int64, calls storeCalls, err error) {
	ps, err := openPgStore(o, runQueueName(dir))
	if err != nil {
		return 0, 0, calls, err
	}
	s := &countingPgStore{pgStore: ps}
	defer func() { err = errors.Join(err, s.Close()) }()
	q, err := durable.New(s)
	if err != nil {
		return 0, 0, calls, err
	}
	defer func() { err = errors.Join(err, q.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), durableGiveUp)
	defer cancel()
	if err := durablebench.Preload(ctx, q, "m", k, durablePayload, func(int) time.Time { return time.Time{} }); err != nil {
		return 0, 0, calls, fmt.Errorf("preload: %w", err)
	}
	before := s.calls()
	err = metered(ctx, m, &statements, func() (err error) {
		rate, err = durablebench.RunRate(ctx, q, riverWorkers, k)
		return err
	})
	calls = s.calls().since(before)
	if err != nil {
		return 0, 0, calls, giveUpError(ctx, err)
	}
	if st, err := q.Stats(ctx); err != nil || st.Pending+st.InFlight+st.Dead != 0 {
		return 0, 0, calls, fmt.Errorf("stats after all %d were worked: %+v, %v", k, st, err)
	}
	return rate, statements, calls, nil
}

// pgBatchEnqueue returns the enqueues per second of producers goroutines
// writing n messages due in an hour to a new pgstore queue of dir, batch
// messages at a time in transactions (pool.Begin, Store.EnqueueTx,
// Commit), with the statements they took (counted by m), and checks that
// they are all there.
func pgBatchEnqueue(o *options, dir string, producers, n, batch int, m meter) (rate float64, statements int64, err error) {
	s, err := openPgStore(o, runQueueName(dir))
	if err != nil {
		return 0, 0, err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	ctx := context.Background()
	err = metered(ctx, m, &statements, func() (err error) {
		rate, err = durablebench.WriteBatchRate(ctx, "m", producers, n, batch, durablePayload, func(ctx context.Context, msgs []durable.Message) error {
			return enqueueTx(ctx, s, msgs)
		})
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	if st, err := s.Stats(ctx); err != nil || st.Pending != n {
		return 0, 0, fmt.Errorf("stats after %d enqueues: %+v, %v", n, st, err)
	}
	return rate, statements, nil
}

// enqueueTx writes msgs with EnqueueTx in a transaction of their own.
func enqueueTx(ctx context.Context, s pgStore, msgs []durable.Message) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	if err := s.EnqueueTx(ctx, tx, msgs...); err != nil {
		return errors.Join(err, tx.Rollback(ctx))
	}
	return tx.Commit(ctx)
}

// runLateness opens a queue on a new pgstore queue of dir, runs it with
// workers handlers (Queue.Run), writes n messages due at random instants
// spread over window after a lead time (see spreadDue), from
// durableConsumers producers in transactions of riverBatch (EnqueueTx, as
// another process would: the queue learns of them from the store's
// notifications), and returns how late after its due time each handler
// started, sorted: negative for those started early.
func runLateness(o *options, dir string, workers, n int, window time.Duration) (late []time.Duration, err error) {
	s, err := openPgStore(o, runQueueName(dir))
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	q, err := durable.New(s)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, q.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), window+durableGiveUp)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()

	late = make([]time.Duration, 0, n)
	var mu sync.Mutex
	all := make(chan struct{})
	ran := make(chan error, 1)
	go func() {
		ran <- q.Run(runCtx, workers, func(_ context.Context, d *durable.Delivery) error {
			l := time.Since(d.Due)
			mu.Lock()
			defer mu.Unlock()
			late = append(late, l)
			if len(late) == n {
				close(all)
			}
			return nil
		})
	}()

	lead, dueOf := spreadDue(n, window)
	first := dueOf(-1)
	body := make([]byte, durablePayload)
	var next atomic.Int64
	err = parallel(durableConsumers, func() error {
		msgs := make([]durable.Message, 0, riverBatch)
		for {
			lo := int(next.Add(riverBatch)) - riverBatch
			if lo >= n {
				return nil
			}
			msgs = msgs[:0]
			for i := lo; i < min(lo+riverBatch, n); i++ {
				msgs = append(msgs, durable.Message{ID: durablebench.ID("m", i), Payload: body, Due: dueOf(i)})
			}
			if err := enqueueTx(ctx, s, msgs); err != nil {
				return err
			}
		}
	})
	if err == nil {
		if over := time.Since(first); over > 0 {
			err = fmt.Errorf("enqueueing %d messages took %v longer than the %v allowed", n, over, lead)
		}
	}
	if err == nil {
		select {
		case <-all:
		case <-ctx.Done():
		}
	}
	stop()
	if err := errors.Join(err, <-ran); err != nil {
		return nil, giveUpError(ctx, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(late) < n {
		return nil, fmt.Errorf("%d of %d messages handled: %w", len(late), n, ctx.Err())
	}
	slices.Sort(late)
	return late, nil
}
