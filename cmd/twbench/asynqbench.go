package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/seed64e23a5c/timingwheel/internal/durablebench"
)

// asynqTaskType is the type of every task the asynq scenario enqueues.
const asynqTaskType = "twbench"

// asynqBench runs hibiken/asynq's client and server on the Redis of
// -store, every figure in a queue of its own whose keys drop deletes.
type asynqBench struct {
	client *redis.Client
	// prefix starts the name of every queue of the run.
	prefix string
	queues []string
}

// newAsynqBench connects to the Redis of -store; prefix names the run.
func newAsynqBench(o *options, prefix string) (*asynqBench, error) {
	client, err := redisClient(o)
	if err != nil {
		return nil, err
	}
	return &asynqBench{client: client, prefix: prefix}, nil
}

// queue returns a new queue name for figure, to be dropped by drop.
func (b *asynqBench) queue(figure string) string {
	name := b.prefix + ":" + figure
	b.queues = append(b.queues, name)
	return name
}

// server returns an asynq server of workers on queue; poll, if not zero,
// sets both of its polling intervals (DelayedTaskCheckInterval, which
// moves due tasks to the queue, and TaskCheckInterval, its sleep when the
// queue is empty), which are otherwise asynq's defaults (5s and 1s).
func (b *asynqBench) server(queue string, workers int, poll time.Duration) *asynq.Server {
	return asynq.NewServerFromRedisClient(b.client, asynq.Config{
		Concurrency:              workers,
		Queues:                   map[string]int{queue: 1},
		DelayedTaskCheckInterval: poll,
		TaskCheckInterval:        poll,
		LogLevel:                 asynq.ErrorLevel,
	})
}

// enqueue enqueues n tasks of payload bytes to queue from producers
// goroutines at once, the ith with opts(i) and the payload that
// payloadOf(i, buf) leaves in buf, and returns how long it took.
func (b *asynqBench) enqueue(ctx context.Context, queue string, producers, n, payload int, opts func(i int) []asynq.Option, payloadOf func(i int, buf []byte)) (time.Duration, error) {
	client := asynq.NewClientFromRedisClient(b.client)
	var next atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, producers)
	for p := range producers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				body := make([]byte, payload) // asynq keeps the slice
				if payloadOf != nil {
					payloadOf(i, body)
				}
				task := asynq.NewTask(asynqTaskType, body)
				if _, err := client.EnqueueContext(ctx, task, append(opts(i), asynq.Queue(queue))...); err != nil {
					errs[p] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start), errors.Join(errs...)
}

// enqueueRate returns the enqueues per second of producers goroutines
// enqueueing n tasks of payload bytes, due in an hour (ProcessIn), to a
// new queue named after figure, with the Redis commands they took, and
// checks that they are all scheduled.
func (b *asynqBench) enqueueRate(ctx context.Context, figure string, producers, n, payload int) (rate float64, commands int64, err error) {
	queue := b.queue(figure)
	var took time.Duration
	err = metered(ctx, newRedisMeter(b.client), &commands, func() (err error) {
		took, err = b.enqueue(ctx, queue, producers, n, payload, func(int) []asynq.Option {
			return []asynq.Option{asynq.ProcessIn(time.Hour)}
		}, nil)
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	info, err := asynq.NewInspectorFromRedisClient(b.client).GetQueueInfo(queue)
	if err != nil || info.Scheduled != n {
		return 0, 0, fmt.Errorf("asynq queue after %d enqueues: %+v, %v", n, info, err)
	}
	return float64(n) / took.Seconds(), commands, nil
}

// runRate enqueues n tasks of payload bytes due now to a new queue named
// after figure, then starts a server of workers on it whose handler
// returns nil, and returns the tasks handled and acked per second from
// the server's start until all n are acked, with the Redis commands that
// took.
func (b *asynqBench) runRate(ctx context.Context, figure string, workers, n, payload int) (rate float64, commands int64, err error) {
	queue := b.queue(figure)
	if _, err := b.enqueue(ctx, queue, durableConsumers, n, payload, func(int) []asynq.Option { return nil }, nil); err != nil {
		return 0, 0, fmt.Errorf("preload: %w", err)
	}
	meter := newRedisMeter(b.client)
	if err := meter.start(ctx); err != nil {
		return 0, 0, err
	}
	var handled atomic.Int64
	all := make(chan struct{})
	srv := b.server(queue, workers, 0)
	start := time.Now()
	if err := srv.Start(asynq.HandlerFunc(func(context.Context, *asynq.Task) error {
		if handled.Add(1) == int64(n) {
			close(all)
		}
		return nil
	})); err != nil {
		return 0, 0, err
	}
	defer srv.Shutdown()
	select {
	case <-all:
	case <-ctx.Done():
		return 0, 0, fmt.Errorf("asynq handled %d of %d tasks: %w", handled.Load(), n, ctx.Err())
	}
	// The last handlers' acks (asynq's Done) follow their return: wait
	// for asynq's count of tasks done to reach n.
	polls, err := b.waitProcessed(ctx, queue, n)
	elapsed := time.Since(start)
	if err != nil {
		return 0, 0, err
	}
	if commands, err = meter.stop(ctx, polls); err != nil {
		return 0, 0, err
	}
	info, err := asynq.NewInspectorFromRedisClient(b.client).GetQueueInfo(queue)
	if err != nil || info.Size != 0 {
		return 0, 0, fmt.Errorf("asynq queue after all %d were handled: %+v, %v", n, info, err)
	}
	return float64(n) / elapsed.Seconds(), commands, nil
}

// waitProcessed polls asynq's count of the tasks of queue done until it
// reaches n, and returns how many GETs that took.
func (b *asynqBench) waitProcessed(ctx context.Context, queue string, n int) (polls int64, err error) {
	key := "asynq:{" + queue + "}:processed" // asynq's total, which its ack increments
	for {
		polls++
		done, err := b.client.Get(ctx, key).Int()
		if err != nil && !errors.Is(err, redis.Nil) {
			return polls, err
		}
		if done >= n {
			return polls, nil
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// lateness starts a server of workers on a new queue (with poll, see
// server), enqueues n tasks due at random instants spread over window
// after a lead time (ProcessAt), and returns how late after its due time
// each was handled, sorted: negative for those handled early.
func (b *asynqBench) lateness(ctx context.Context, figure string, workers, n int, window, poll time.Duration) ([]time.Duration, error) {
	queue := b.queue(figure)
	late := make([]time.Duration, 0, n)
	var mu sync.Mutex
	all := make(chan struct{})
	srv := b.server(queue, workers, poll)
	if err := srv.Start(asynq.HandlerFunc(func(_ context.Context, t *asynq.Task) error {
		due := time.Unix(0, int64(binary.BigEndian.Uint64(t.Payload())))
		l := time.Since(due)
		mu.Lock()
		defer mu.Unlock()
		late = append(late, l)
		if len(late) == n {
			close(all)
		}
		return nil
	})); err != nil {
		return nil, err
	}
	defer srv.Shutdown()

	// The same lead and spread as durablebench.Lateness.
	lead := durablebench.Lead(n)
	first := time.Now().Add(lead)
	step := window / time.Duration(n)
	slot := rand.Perm(n)
	dueOf := func(i int) time.Time { return first.Add(time.Duration(slot[i]) * step) }
	_, err := b.enqueue(ctx, queue, durableConsumers, n, durablePayload, func(i int) []asynq.Option {
		return []asynq.Option{asynq.ProcessAt(dueOf(i))}
	}, func(i int, buf []byte) { binary.BigEndian.PutUint64(buf, uint64(dueOf(i).UnixNano())) })
	if err != nil {
		return nil, err
	}
	if over := time.Since(first); over > 0 {
		return nil, fmt.Errorf("enqueueing %d tasks took %v longer than the %v allowed", n, over, lead)
	}
	select {
	case <-all:
	case <-ctx.Done():
	}
	srv.Shutdown() // no handler runs after this
	mu.Lock()
	defer mu.Unlock()
	if len(late) < n {
		return nil, fmt.Errorf("asynq handled %d of %d tasks: %w", len(late), n, ctx.Err())
	}
	slices.Sort(late)
	return late, nil
}

// drop deletes the keys of every queue of the run, and their names from
// asynq's set of queues, then closes the connection. The servers remove
// their own keys when they shut down.
func (b *asynqBench) drop(ctx context.Context) error {
	var keys []string
	iter := b.client.Scan(ctx, 0, "asynq:{"+b.prefix+":*", 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	err := iter.Err()
	for chunk := range slices.Chunk(keys, 1000) {
		if err != nil {
			break
		}
		err = b.client.Unlink(ctx, chunk...).Err()
	}
	if err == nil && len(b.queues) > 0 {
		err = b.client.SRem(ctx, "asynq:queues", toAny(b.queues)...).Err()
	}
	return errors.Join(err, b.client.Close())
}

// toAny returns s as a []any, for variadic Redis arguments.
func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
