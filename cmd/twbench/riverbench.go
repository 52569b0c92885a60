package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/seed64e23a5c/timingwheel/internal/durablebench"
)

// riverArgs are the arguments of every job the river scenario inserts:
// a payload of durablePayload bytes, as our messages carry.
type riverArgs struct {
	Payload string `json:"p"`
}

// Kind is the kind of the jobs of the river scenario.
func (riverArgs) Kind() string { return "twbench" }

// riverFetch is how a River client fetches jobs: River's defaults (zero
// values), or its fastest settings.
type riverFetch struct {
	cooldown, poll time.Duration
}

// riverDefaults is River's default fetching: FetchCooldown 100ms and
// FetchPollInterval 1s.
var riverDefaults = riverFetch{}

// riverTuned is River's fastest fetching: FetchCooldown and
// FetchPollInterval at their minimum.
var riverTuned = riverFetch{cooldown: river.FetchCooldownMin, poll: river.FetchPollIntervalMin}

// riverBench runs riverqueue/river's client on a pool of its own on the
// scratch database of the river scenario, every figure in a River queue
// of its own. Its tables (river_job and the others) are created by
// rivermigrate and go with the scratch database.
type riverBench struct {
	pool   *pgxpool.Pool
	driver *riverpgxv5.Driver
	// payload is the payload of every job.
	payload string
}

// newRiverBench opens a pool on the database of o and migrates River's
// tables in it.
func newRiverBench(ctx context.Context, o *options) (*riverBench, error) {
	pool, err := pgPool(ctx, o)
	if err != nil {
		return nil, err
	}
	b := &riverBench{pool: pool, driver: riverpgxv5.New(pool), payload: strings.Repeat("x", durablePayload)}
	migrator, err := rivermigrate.New(b.driver, &rivermigrate.Config{Logger: quietLogger()})
	if err == nil {
		_, err = migrator.Migrate(ctx, rivermigrate.DirectionUp, nil)
	}
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("migrating River's tables: %w", err)
	}
	return b, nil
}

// close closes the pool.
func (b *riverBench) close() { b.pool.Close() }

// quietLogger discards River's logs: twbench reports every error itself.
func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// client returns a River client on queue with workers MaxWorkers, the
// fetching of f, and work as the worker of riverArgs; workers 0 makes an
// insert-only client (no queue, never started).
func (b *riverBench) client(queue string, workers int, f riverFetch, work func(context.Context, *river.Job[riverArgs]) error) (*river.Client[pgx.Tx], error) {
	ws := river.NewWorkers()
	river.AddWorker(ws, river.WorkFunc(work))
	cfg := &river.Config{
		Logger:            quietLogger(),
		Workers:           ws,
		FetchCooldown:     f.cooldown,
		FetchPollInterval: f.poll,
	}
	if workers > 0 {
		cfg.Queues = map[string]river.QueueConfig{queue: {MaxWorkers: workers}}
	}
	return river.NewClient(b.driver, cfg)
}

// insert inserts n jobs to queue from producers goroutines at once, in
// batches of batch (Insert for 1, InsertMany otherwise), the ith job
// scheduled at at(i) (nil: now), and returns how long it took.
func (b *riverBench) insert(ctx context.Context, queue string, producers, n, batch int, at func(i int) time.Time) (time.Duration, error) {
	c, err := b.client(queue, 0, riverDefaults, func(context.Context, *river.Job[riverArgs]) error { return nil })
	if err != nil {
		return 0, err
	}
	opts := func(i int) *river.InsertOpts {
		o := &river.InsertOpts{Queue: queue}
		if at != nil {
			o.ScheduledAt = at(i)
		}
		return o
	}
	args := riverArgs{Payload: b.payload}
	var next atomic.Int64
	start := time.Now()
	err = parallel(producers, func() error {
		params := make([]river.InsertManyParams, 0, batch)
		for {
			lo := int(next.Add(int64(batch))) - batch
			if lo >= n {
				return nil
			}
			hi := min(lo+batch, n)
			if batch == 1 {
				if _, err := c.Insert(ctx, args, opts(lo)); err != nil {
					return err
				}
				continue
			}
			params = params[:0]
			for i := lo; i < hi; i++ {
				params = append(params, river.InsertManyParams{Args: args, InsertOpts: opts(i)})
			}
			if _, err := c.InsertMany(ctx, params); err != nil {
				return err
			}
		}
	})
	return time.Since(start), err
}

// insertRate returns the inserts per second of producers goroutines
// inserting n jobs due in an hour to a new queue, in batches of batch,
// with the statements they took (counted by m), and checks that they are
// all there.
func (b *riverBench) insertRate(ctx context.Context, queue string, producers, n, batch int, m meter) (rate float64, statements int64, err error) {
	hour := time.Now().Add(time.Hour)
	var took time.Duration
	err = metered(ctx, m, &statements, func() (err error) {
		took, err = b.insert(ctx, queue, producers, n, batch, func(int) time.Time { return hour })
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	if got, err := b.count(ctx, queue, "scheduled"); err != nil || got != n {
		return 0, 0, fmt.Errorf("river_job after %d inserts: %d scheduled jobs, %v", n, got, err)
	}
	return float64(n) / took.Seconds(), statements, nil
}

// count returns how many jobs of queue are in state.
func (b *riverBench) count(ctx context.Context, queue, state string) (int, error) {
	var n int
	err := b.pool.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE queue = $1 AND state = $2::river_job_state", queue, state).Scan(&n)
	return n, err
}

// workRate inserts n jobs due now to a new queue, then starts a client
// of workers on it, fetching as f says, whose worker returns nil, and
// returns the jobs worked and completed per second from the client's start
// until River reports all n completed (its completer writes completions
// in batches, after the workers return), with the statements that took
// (counted by m).
func (b *riverBench) workRate(ctx context.Context, queue string, workers, n int, f riverFetch, m meter) (rate float64, statements int64, err error) {
	if _, err := b.insert(ctx, queue, durableConsumers, n, 100, nil); err != nil {
		return 0, 0, fmt.Errorf("preload: %w", err)
	}
	c, err := b.client(queue, workers, f, func(context.Context, *river.Job[riverArgs]) error { return nil })
	if err != nil {
		return 0, 0, err
	}
	events, cancel := c.SubscribeConfig(&river.SubscribeConfig{ChanSize: n + 1, Kinds: []river.EventKind{river.EventKindJobCompleted}})
	defer cancel()
	if err := m.start(ctx); err != nil {
		return 0, 0, err
	}
	start := time.Now()
	if err := c.Start(ctx); err != nil {
		return 0, 0, err
	}
	defer func() { err = errors.Join(err, stopRiver(c)) }()
	for done := 0; done < n; {
		select {
		case ev, ok := <-events:
			if !ok {
				return 0, 0, fmt.Errorf("river's events ended after %d of %d jobs", done, n)
			}
			if ev.Kind == river.EventKindJobCompleted {
				done++
			}
		case <-ctx.Done():
			return 0, 0, fmt.Errorf("river completed %d of %d jobs: %w", done, n, ctx.Err())
		}
	}
	elapsed := time.Since(start)
	if statements, err = m.stop(ctx, 0); err != nil {
		return 0, 0, err
	}
	if got, err := b.count(ctx, queue, "completed"); err != nil || got != n {
		return 0, 0, fmt.Errorf("river_job after %d jobs worked: %d completed, %v", n, got, err)
	}
	return float64(n) / elapsed.Seconds(), statements, nil
}

// stopRiver stops c, waiting at most durableGiveUp for its jobs.
func stopRiver(c *river.Client[pgx.Tx]) error {
	ctx, cancel := context.WithTimeout(context.Background(), durableGiveUp)
	defer cancel()
	return c.Stop(ctx)
}

// lateness starts a client of workers on a new queue, fetching as f says,
// inserts n jobs scheduled at random instants spread over window after a
// lead time, from durableConsumers producers in batches of 100
// (InsertMany), and returns how late after its ScheduledAt each job's
// Work started, sorted: negative for those started early.
func (b *riverBench) lateness(ctx context.Context, queue string, workers, n int, window time.Duration, f riverFetch) (late []time.Duration, err error) {
	late = make([]time.Duration, 0, n)
	var mu sync.Mutex
	all := make(chan struct{})
	c, err := b.client(queue, workers, f, func(_ context.Context, job *river.Job[riverArgs]) error {
		l := time.Since(job.ScheduledAt)
		mu.Lock()
		defer mu.Unlock()
		late = append(late, l)
		if len(late) == n {
			close(all)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	stopped := false
	defer func() {
		if !stopped {
			err = errors.Join(err, stopRiver(c))
		}
	}()

	lead, dueOf := spreadDue(n, window)
	first := dueOf(-1)
	if _, err := b.insert(ctx, queue, durableConsumers, n, 100, dueOf); err != nil {
		return nil, err
	}
	if over := time.Since(first); over > 0 {
		return nil, fmt.Errorf("inserting %d jobs took %v longer than the %v allowed", n, over, lead)
	}
	select {
	case <-all:
	case <-ctx.Done():
	}
	stopped = true
	if err := stopRiver(c); err != nil { // no Work starts after this
		return nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	if len(late) < n {
		return nil, fmt.Errorf("river worked %d of %d jobs: %w", len(late), n, ctx.Err())
	}
	slices.Sort(late)
	return late, nil
}

// spreadDue returns the due times of n messages or jobs spread over
// window after a lead time, as durablebench.Lateness spreads them: due(i)
// for the ith (in random order), due(-1) the first of all, after
// durablebench.Lead.
func spreadDue(n int, window time.Duration) (lead time.Duration, due func(i int) time.Time) {
	lead = durablebench.Lead(n)
	first := time.Now().Add(lead)
	step := window / time.Duration(n)
	slot := rand.Perm(n)
	return lead, func(i int) time.Time {
		if i < 0 {
			return first
		}
		return first.Add(time.Duration(slot[i]) * step)
	}
}

// parallel runs f on n goroutines and returns their errors, joined.
func parallel(n int, f func() error) error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for g := range n {
		wg.Go(func() { errs[g] = f() })
	}
	wg.Wait()
	return errors.Join(errs...)
}
