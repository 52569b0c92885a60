package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/boltstore"
	"github.com/seed64e23a5c/timingwheel/durable/redisstore"
	"github.com/seed64e23a5c/timingwheel/internal/durablebench"
)

// init registers the durable scenario.
func init() {
	register(scenario{
		name:  "durable",
		order: 70,
		help: "the durable queue (package durable, ours only) on a fresh bbolt file in a temp dir, SyncAlways " +
			"(or on the Redis of -store, in queues deleted afterwards, or on the PostgreSQL or MySQL of -store, in a scratch database " +
			"dropped afterwards), 100-byte payloads: " +
			"enqueues/s from 1, 8 and 64 producers one at a time and from 8 in batches of 100, and receive+acks/s with 8 consumers, K=-pending/200 messages each (100 to 20k); " +
			"jobs worked/s with Run and 8 workers, plain and through a Mux of 2 kinds with JSON payloads (the medians of -rounds rounds that alternate which goes first); " +
			"lateness p50/p99/max with 8 consumers, min(K, 2000) messages over min(2s, -window); " +
			"reopen time (median of 3) and memory with -pending messages due in a day (about 400 B of disk each, or of Redis memory; " +
			"PostgreSQL, MySQL: the scratch database's size); on MySQL also the SQL statements per message of the enqueues from 1 producer, " +
			"in batches and of the receive+acks (the server's Questions: on a server nothing else uses)",
		// The messages are in the file, not in the heap: the queue holds
		// two timers, and the lateness figure K durations.
		timers: func(*options) int { return 0 },
		run:    runDurable,
	})
}

// Units that only the durable scenario uses.
const (
	unitEnqueuesSec = "enqueues/s"
	unitAcksSec     = "receive+acks/s"
	unitMiB         = "MiB"
)

// The durable scenario's fixed sizes.
const (
	// durablePayload is the payload of every message, in bytes.
	durablePayload = 100
	// durableConsumers receive and ack in the receive+ack figure, and
	// durableLateConsumers in the lateness figures.
	durableConsumers     = 8
	durableLateConsumers = 8
	// durableReopens is how many times the reopen figure is timed; it
	// reports the median.
	durableReopens = 3
	// durableGiveUp is how long a figure that receives waits for its
	// messages before it fails.
	durableGiveUp = 2 * time.Minute
	// durableFillChunk is the number of messages between two updates of
	// the fill's progress bar.
	durableFillChunk = 50_000
)

// durableProducers are the producer counts of the enqueue figures.
var durableProducers = []int{1, 8, 64}

// durableBatch is the messages a call of the figures of enqueues in
// batches, made by durableBatchProducers producers.
const (
	durableBatch          = 100
	durableBatchProducers = 8
)

// Values of -store.
const (
	storeBolt = "bolt"
	// durableFile is the name of the bbolt file in its directory.
	durableFile = "durable.db"
)

// isRedisURL reports whether store names a Redis server.
func isRedisURL(store string) bool {
	return strings.HasPrefix(store, "redis://") || strings.HasPrefix(store, "rediss://")
}

// validateStore checks -store.
func (o *options) validateStore() error {
	if o.pgUnsafe && o.store != storeOwnPostgres {
		return usagef("-pg-unsafe needs -store %s (a PostgreSQL of twbench's own)", storeOwnPostgres)
	}
	switch {
	case o.store == storeBolt:
		return nil
	case isRedisURL(o.store):
		if _, err := redis.ParseURL(o.store); err != nil {
			return usagef("-store: %v", err)
		}
		return nil
	case o.store == storeOwnPostgres:
		return nil
	case isPostgresURL(o.store):
		if _, err := pgxpool.ParseConfig(o.store); err != nil {
			return usagef("-store: %v", err)
		}
		return nil
	case isMySQLURL(o.store):
		if _, err := myConfig(o); err != nil {
			return usagef("-store: %v", err)
		}
		return nil
	}
	return usagef("-store must be %s, %s, a redis:// URL, a postgres:// URL or a mysql:// URL, got %q", storeBolt, storeOwnPostgres, o.store)
}

// durableCount is the number of messages of the enqueue and receive+ack
// figures: -pending/200, between 100 and 20k. At 2-3k enqueues/s for one
// producer (an fsync each), that keeps the full run under a minute.
func durableCount(o *options) int { return min(max(o.pending/200, 100), 20_000) }

// durableLateCount is the number of messages of the lateness figures:
// durableCount, at most 2000, so that they are all enqueued well within
// the 200ms lead of durablebench.Lateness.
func durableLateCount(o *options) int { return min(durableCount(o), 2000) }

// durableWindow is the window over which the lateness figure's messages
// are due: 2s, or -window if shorter.
func durableWindow(o *options) time.Duration { return min(2*time.Second, o.window) }

// openDurableStore opens the store that -store names, fresh for each
// dir (an empty directory of its own): for bolt, the file durableFile in
// dir, created if needed; for Redis, PostgreSQL and MySQL, the queue named
// after dir (see runQueueName), in the scratch database of o for
// PostgreSQL and MySQL. This is the one place that makes a store.
func openDurableStore(o *options, dir string) (durable.Store, error) {
	if o.store == storeBolt {
		return boltstore.Open(filepath.Join(dir, durableFile))
	}
	if isPostgresURL(o.store) {
		return openPgStore(o, runQueueName(dir))
	}
	if isMySQLURL(o.store) {
		return openMyStore(o, runQueueName(dir))
	}
	client, err := redisClient(o)
	if err != nil {
		return nil, err
	}
	s, err := redisstore.New(client, runQueueName(dir))
	if err != nil {
		_ = client.Close()
		return nil, err
	}
	return redisStore{s, client}, nil
}

// redisStore is a Redis store that closes its client with it.
type redisStore struct {
	*redisstore.Store
	client *redis.Client
}

func (s redisStore) Close() error { return errors.Join(s.Store.Close(), s.client.Close()) }

// redisClient connects to the Redis of -store.
func redisClient(o *options) (*redis.Client, error) {
	ro, err := redis.ParseURL(o.store)
	if err != nil {
		return nil, err
	}
	return redis.NewClient(ro), nil
}

// runQueueName is the Redis, PostgreSQL or MySQL queue of dir: its temp dir's
// name and its own, unique to the run and the figure.
func runQueueName(dir string) string {
	return "twbench:" + filepath.Base(filepath.Dir(dir)) + ":" + filepath.Base(dir)
}

// dropRedisQueues deletes the keys of every queue of the run whose temp
// dir is root, so that a run leaves nothing in Redis.
func dropRedisQueues(o *options, root string) error {
	client, err := redisClient(o)
	if err != nil {
		return err
	}
	defer client.Close()
	ctx := context.Background()
	iter := client.Scan(ctx, 0, "tw:{twbench:"+filepath.Base(root)+":*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return err
	}
	for chunk := range slices.Chunk(keys, 1000) {
		if err := client.Unlink(ctx, chunk...).Err(); err != nil {
			return err
		}
	}
	return nil
}

// openDurable opens a queue, with the default options, on the store of
// dir (see openDurableStore). closeAll closes the queue then the store,
// and returns the first error.
func openDurable(o *options, dir string) (q *durable.Queue, closeAll func() error, err error) {
	s, err := openDurableStore(o, dir)
	if err != nil {
		return nil, nil, err
	}
	q, err = durable.New(s)
	if err != nil {
		_ = s.Close()
		return nil, nil, err
	}
	return q, func() error { return errors.Join(q.Close(), s.Close()) }, nil
}

// durableStoreBytes returns the size of the store of dir: its file's, or
// for Redis the memory the server uses (used_memory), all queues in, and
// for PostgreSQL and MySQL the size of the scratch database.
func durableStoreBytes(o *options, dir string) (int64, error) {
	if isPostgresURL(o.store) {
		return pgDatabaseBytes(o)
	}
	if isMySQLURL(o.store) {
		return myDatabaseBytes(o)
	}
	if o.store != storeBolt {
		client, err := redisClient(o)
		if err != nil {
			return 0, err
		}
		defer client.Close()
		info, err := client.Info(context.Background(), "memory").Result()
		if err != nil {
			return 0, err
		}
		for line := range strings.Lines(info) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
				return strconv.ParseInt(v, 10, 64)
			}
		}
		return 0, errors.New("no used_memory in INFO memory")
	}
	fi, err := os.Stat(filepath.Join(dir, durableFile))
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// runDurable measures the durable queue. Every figure starts on a fresh
// store in a directory of its own, under a temp dir removed at the end;
// reopen and memory share one, filled with -pending messages. On
// PostgreSQL and MySQL, every queue is in a scratch database dropped at
// the end; on MySQL, a meter counts the statements of the enqueue and
// receive+ack figures (see myMeter).
func runDurable(e *env) (rows []row, err error) {
	o := e.opts
	root, err := os.MkdirTemp("", "twbench-durable-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err2 := os.RemoveAll(root); err == nil && err2 != nil {
			err = err2
		}
	}()
	switch {
	case isRedisURL(o.store):
		defer func() {
			if err2 := dropRedisQueues(o, root); err == nil && err2 != nil {
				err = err2
			}
		}()
	case isPostgresURL(o.store):
		var scratch *pgScratch
		if scratch, err = newPgScratch(o); err != nil {
			return nil, err
		}
		defer func() { err = errors.Join(err, scratch.drop()) }()
		o = scratch.o
	case isMySQLURL(o.store):
		var scratch *myScratch
		if scratch, err = newMyScratch(o); err != nil {
			return nil, err
		}
		defer func() { err = errors.Join(err, scratch.drop()) }()
		o = scratch.o
	}
	// On MySQL, m counts statements, and sqlRows are its figures, which
	// follow those of throughput.
	var (
		m       meter
		sqlRows []row
	)
	if isMySQLURL(o.store) {
		mm, merr := newMyMeter(o)
		if merr != nil {
			return nil, merr
		}
		defer func() { err = errors.Join(err, mm.close()) }()
		m = mm
	}
	perMessage := func(figure string, statements int64, k int) {
		if m != nil {
			sqlRows = append(sqlRows, oursOnly("SQL statements per message, "+figure, unitStatementsMsg, perMsg(statements, k)))
		}
	}
	// The figures of throughput and lateness open their PostgreSQL pools'
	// connections before they start; reopen times the dial.
	warm := *o
	warm.pgWarm = true
	fresh := func(name string) (string, error) {
		dir := filepath.Join(root, name)
		return dir, os.Mkdir(dir, 0o700)
	}

	k := durableCount(o)
	ks := "K=" + formatCount(k)
	for _, p := range durableProducers {
		dir, err := fresh("enqueue-" + strconv.Itoa(p))
		if err != nil {
			return nil, err
		}
		var pm meter // statements counted with one producer
		if p == 1 {
			pm = m
		}
		rate, statements, err := durableEnqueue(&warm, dir, p, k, 1, pm)
		if err != nil {
			return nil, fmt.Errorf("enqueue, %d producers: %w", p, err)
		}
		figure := fmt.Sprintf("enqueue, %s, %s", plural(p, "producer"), ks)
		rows = append(rows, oursOnly(figure, unitEnqueuesSec, rate))
		if p == 1 {
			perMessage(figure, statements, k)
		}
	}
	dir, err := fresh("enqueue-batches")
	if err != nil {
		return nil, err
	}
	rate, statements, err := durableEnqueue(&warm, dir, durableBatchProducers, k, durableBatch, m)
	if err != nil {
		return nil, fmt.Errorf("enqueue in batches: %w", err)
	}
	figure := fmt.Sprintf("enqueue in batches of %d, %s, %s", durableBatch, plural(durableBatchProducers, "producer"), ks)
	rows = append(rows, oursOnly(figure, unitEnqueuesSec, rate))
	perMessage(figure, statements, k)

	if dir, err = fresh("receive"); err != nil {
		return nil, err
	}
	rate, statements, err = durableReceiveAck(&warm, dir, k, receiveAckRate, m)
	if err != nil {
		return nil, fmt.Errorf("receive+ack: %w", err)
	}
	figure = fmt.Sprintf("receive+ack, %d consumers, %s", durableConsumers, ks)
	rows = append(rows, oursOnly(figure, unitAcksSec, rate))
	perMessage(figure, statements, k)
	rows = append(rows, sqlRows...)

	plain, kinds, err := durableKinds(&warm, fresh, k)
	if err != nil {
		return nil, err
	}
	rows = append(rows,
		oursOnly(fmt.Sprintf("jobs worked with Run, %d workers, %s (median of -rounds)", durableConsumers, ks), unitJobsSec, plain),
		oursOnly(fmt.Sprintf("jobs worked with Run through a Mux, 2 kinds, JSON payloads, %d workers, %s (median of -rounds)", durableConsumers, ks), unitJobsSec, kinds))

	if dir, err = fresh("lateness"); err != nil {
		return nil, err
	}
	lk, win := durableLateCount(o), durableWindow(o)
	late, err := durableLateness(&warm, dir, lk, win)
	if err != nil {
		return nil, fmt.Errorf("lateness: %w", err)
	}
	lateOf := fmt.Sprintf(", %d consumers, K=%s over %v", durableLateConsumers, formatCount(lk), win)
	rows = append(rows,
		oursOnly("lateness p50"+lateOf, unitMillis, millis(durablebench.Percentile(late, 0.50))),
		oursOnly("lateness p99"+lateOf, unitMillis, millis(durablebench.Percentile(late, 0.99))),
		oursOnly("lateness max"+lateOf, unitMillis, millis(late[len(late)-1])),
		// durablebench.Lateness fails on a message received early.
		oursOnly("received before due"+lateOf, unitCount, 0),
	)

	n := o.pending
	label := "N=" + formatCount(n)
	if dir, err = fresh("pending"); err != nil {
		return nil, err
	}
	if err := durableFill(e, o, dir, n); err != nil {
		return nil, fmt.Errorf("filling %s: %w", label, err)
	}
	reopen, err := durableReopen(o, dir, n)
	if err != nil {
		return nil, fmt.Errorf("reopen, %s: %w", label, err)
	}
	rows = append(rows, oursOnly(fmt.Sprintf("reopen: open+stats+close, %s pending (median of %d)", label, durableReopens), unitMillis, millis(reopen)))

	release()
	mem, err := durableMemory(o, dir, n)
	if err != nil {
		return nil, fmt.Errorf("memory, %s: %w", label, err)
	}
	size, err := durableStoreBytes(o, dir)
	if err != nil {
		return nil, err
	}
	sizeLabel := "file size, "
	switch {
	case isRedisURL(o.store):
		sizeLabel = "Redis used_memory, "
	case isPostgresURL(o.store):
		sizeLabel = "database size (pg_database_size), "
	case isMySQLURL(o.store):
		sizeLabel = "database size (InnoDB data+index), "
	}
	mib := func(b float64) float64 { return b / (1 << 20) }
	return append(rows,
		oursOnly("heap held by the open queue, "+label+" pending", unitMiB, mib(float64(mem.growth))),
		oursOnly("process heap after open, "+label+" pending", unitMiB, mib(float64(mem.after.Heap))),
		oursOnly("process RSS anon after open, "+label+" pending", unitMiB, mib(float64(mem.after.RSSAnon))),
		oursOnly("process RSS file after open, "+label+" pending", unitMiB, mib(float64(mem.after.RSSFile))),
		oursOnly(sizeLabel+label+" pending", unitMiB, mib(float64(size))),
	), nil
}

// plural returns "1 producer" or "8 producers".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// durableEnqueue returns the enqueues per second of producers goroutines
// enqueueing k messages due in an hour between them to a new queue in
// dir, batch messages a call of Queue.Enqueue, and checks that they are
// all there. With a meter, it also returns the Redis commands or SQL
// statements the enqueues took (opening the queue left out).
func durableEnqueue(o *options, dir string, producers, k, batch int, m meter) (rate float64, commands int64, err error) {
	q, closeAll, err := openDurable(o, dir)
	if err != nil {
		return 0, 0, err
	}
	defer func() { err = errors.Join(err, closeAll()) }()
	ctx := context.Background()
	err = metered(ctx, m, &commands, func() (err error) {
		rate, err = durablebench.EnqueueBatchRate(ctx, q, "m", producers, k, batch, durablePayload)
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	if st, err := q.Stats(ctx); err != nil || st.Pending != k {
		return 0, 0, fmt.Errorf("stats after %d enqueues: %+v, %v", k, st, err)
	}
	return rate, commands, nil
}

// A durableRate has the messages of q, all due, received and acked, and
// returns how many a second: durablebench.ReceiveAckRate with
// durableConsumers goroutines, or RunRate with as many workers.
type durableRate func(ctx context.Context, q *durable.Queue, k int) (float64, error)

// receiveAckRate is durablebench.ReceiveAckRate with durableConsumers
// goroutines.
func receiveAckRate(ctx context.Context, q *durable.Queue, k int) (float64, error) {
	return durablebench.ReceiveAckRate(ctx, q, durableConsumers, k)
}

// runRate is durablebench.RunRate with durableConsumers workers.
func runRate(ctx context.Context, q *durable.Queue, k int) (float64, error) {
	return durablebench.RunRate(ctx, q, durableConsumers, k)
}

// durableReceiveAck preloads a new queue in dir with k messages due now,
// and returns the receive+acks per second of rate taking them all. With a
// meter, it also returns the Redis commands or SQL statements that took
// (the preload left out).
func durableReceiveAck(o *options, dir string, k int, rate durableRate, m meter) (perSec float64, commands int64, err error) {
	q, closeAll, err := openDurable(o, dir)
	if err != nil {
		return 0, 0, err
	}
	defer func() { err = errors.Join(err, closeAll()) }()
	ctx, cancel := context.WithTimeout(context.Background(), durableGiveUp)
	defer cancel()
	if err := durablebench.Preload(ctx, q, "m", k, durablePayload, func(int) time.Time { return time.Time{} }); err != nil {
		return 0, 0, fmt.Errorf("preload: %w", err)
	}
	err = metered(ctx, m, &commands, func() (err error) {
		perSec, err = rate(ctx, q, k)
		return err
	})
	if err != nil {
		return 0, 0, giveUpError(ctx, err)
	}
	if st, err := q.Stats(ctx); err != nil || st.Pending+st.InFlight+st.Dead != 0 {
		return 0, 0, fmt.Errorf("stats after all %d were acked: %+v, %v", k, st, err)
	}
	return perSec, commands, nil
}

// A meter counts the commands (Redis, redisMeter) or statements
// (PostgreSQL, pgMeter) that a server is sent between start and stop.
type meter interface {
	start(ctx context.Context) error
	// stop returns the count since start, less own: those that the
	// caller sent itself to watch the work, not part of it.
	stop(ctx context.Context, own int64) (int64, error)
}

// metered runs f; with a meter, it stores in commands the commands or
// statements executed meanwhile.
func metered(ctx context.Context, m meter, commands *int64, f func() error) error {
	if m == nil {
		return f()
	}
	if err := m.start(ctx); err != nil {
		return err
	}
	if err := f(); err != nil {
		return err
	}
	n, err := m.stop(ctx, 0)
	*commands = n
	return err
}

// durableLateness returns how late, after their due time, k messages due
// across window were received from a new queue in dir by
// durableLateConsumers goroutines, sorted.
func durableLateness(o *options, dir string, k int, window time.Duration) (late []time.Duration, err error) {
	q, closeAll, err := openDurable(o, dir)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, closeAll()) }()
	ctx, cancel := context.WithTimeout(context.Background(), window+durableGiveUp)
	defer cancel()
	late, err = durablebench.Lateness(ctx, q, "m", durableLateConsumers, k, window)
	if err != nil {
		return nil, giveUpError(ctx, err)
	}
	if len(late) != k {
		return nil, fmt.Errorf("%d of %d messages received", len(late), k)
	}
	return late, nil
}

// giveUpError explains err when ctx ran out: the messages were not all
// received within durableGiveUp.
func giveUpError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("messages not all received within %v of their due time: %w", durableGiveUp, err)
	}
	return err
}

// durableFill writes n messages due in a day, 1ms apart, straight to the
// store of dir (of o), in batches, and closes it.
func durableFill(e *env, o *options, dir string, n int) (err error) {
	s, err := openDurableStore(o, dir)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	ctx := context.Background()
	day := time.Now().Add(24 * time.Hour)
	b := e.progress.start("durable: filling the store, N="+formatCount(n), n)
	defer b.finish()
	// One PreloadStore per chunk, for the progress bar: a prefix per
	// chunk keeps the IDs distinct.
	for c, lo := 0, 0; lo < n; c, lo = c+1, lo+durableFillChunk {
		size := min(durableFillChunk, n-lo)
		err := durablebench.PreloadStore(ctx, s, "p"+strconv.Itoa(c)+"-", size, durablePayload, func(i int) time.Time {
			return day.Add(time.Duration(lo+i) * time.Millisecond)
		})
		if err != nil {
			return err
		}
		b.add(size)
	}
	return nil
}

// durableReopen times opening a queue on the store of dir, which holds n
// pending messages, asking for its Stats and closing it, durableReopens
// times, and returns the median.
func durableReopen(o *options, dir string, n int) (time.Duration, error) {
	ctx := context.Background()
	times := make([]time.Duration, durableReopens)
	for i := range times {
		start := time.Now()
		q, closeAll, err := openDurable(o, dir)
		if err != nil {
			return 0, err
		}
		st, err := q.Stats(ctx)
		if err == nil && st.Pending != n {
			err = fmt.Errorf("stats: %+v, want %d pending", st, n)
		}
		if err := errors.Join(err, closeAll()); err != nil {
			return 0, err
		}
		times[i] = time.Since(start)
	}
	return median(times), nil
}

// durableMem is the process's memory with a queue open on n pending
// messages, and the heap that opening it added.
type durableMem struct {
	after  durablebench.Memory
	growth uint64
}

// durableMemory opens a queue on the store of dir, which holds n pending
// messages, asks for its Stats, and measures the process's memory before
// closing it.
func durableMemory(o *options, dir string, n int) (m durableMem, err error) {
	before := durablebench.ReadMemory()
	q, closeAll, err := openDurable(o, dir)
	if err != nil {
		return m, err
	}
	defer func() { err = errors.Join(err, closeAll()) }()
	st, err := q.Stats(context.Background())
	if err != nil || st.Pending != n {
		return m, fmt.Errorf("stats: %+v, %v; want %d pending", st, err, n)
	}
	m.after = durablebench.ReadMemory()
	m.growth = m.after.Heap - min(m.after.Heap, before.Heap)
	return m, nil
}

// kindOrder and kindReminder are the kinds of durableKinds's messages.
var (
	kindOrder    = durable.NewKind[benchOrder]("order.close")
	kindReminder = durable.NewKind[benchOrder]("order.remind")
)

// benchOrder is the payload of durableKinds's messages: about 100 bytes
// of JSON.
type benchOrder struct {
	ID    string `json:"id"`
	Shop  string `json:"shop"`
	Note  string `json:"note"`
	Total int    `json:"total"`
}

// durableKinds returns the jobs worked per second of Run with
// durableConsumers workers on k messages due now, in -rounds rounds that
// alternate which goes first, each in a new queue: plain, messages with
// 100-byte payloads and a handler that acks them; kinds, messages of two
// kinds with payloads of JSON of about 100 bytes, through a Mux that
// decodes each (what a queue of kinds costs beside a plain one); the
// medians of the rounds.
func durableKinds(o *options, fresh func(string) (string, error), k int) (plain, kinds float64, err error) {
	mux := durable.NewMux()
	nop := func(context.Context, *durable.Delivery, benchOrder) error { return nil }
	durable.Register(mux, kindOrder, nop)
	durable.Register(mux, kindReminder, nop)
	var plains, kindss []float64
	for r := range o.rounds {
		ours := func() error {
			dir, err := fresh(fmt.Sprintf("run-%d", r))
			if err != nil {
				return err
			}
			rate, _, err := durableReceiveAck(o, dir, k, runRate, nil)
			plains = append(plains, rate)
			return err
		}
		withKinds := func() error {
			dir, err := fresh(fmt.Sprintf("run-kinds-%d", r))
			if err != nil {
				return err
			}
			rate, err := durableKindsRate(o, dir, k, mux)
			kindss = append(kindss, rate)
			return err
		}
		if err := sideBySide(r, []func() error{ours}, []func() error{withKinds}); err != nil {
			return 0, 0, fmt.Errorf("jobs worked with Run: %w", err)
		}
	}
	return median(plains), median(kindss), nil
}

// durableKindsRate preloads a new queue in dir with k messages of two
// kinds due now and returns the jobs per second of Run through mux.
func durableKindsRate(o *options, dir string, k int, mux *durable.Mux) (perSec float64, err error) {
	q, closeAll, err := openDurable(o, dir)
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, closeAll()) }()
	ctx, cancel := context.WithTimeout(context.Background(), durableGiveUp)
	defer cancel()
	err = durablebench.PreloadMessages(ctx, q, k, func(i int) (durable.Message, error) {
		kind := kindOrder
		if i%2 == 1 {
			kind = kindReminder
		}
		id := durablebench.ID("m", i)
		return kind.Message(id, benchOrder{ID: id, Shop: "shop-7", Note: "close it if still unpaid", Total: 4200 + i}, time.Time{})
	})
	if err != nil {
		return 0, fmt.Errorf("preload: %w", err)
	}
	perSec, err = durablebench.RunHandlerRate(ctx, q, durableConsumers, k, mux.Handle)
	if err != nil {
		return 0, giveUpError(ctx, err)
	}
	return perSec, nil
}
