package redisstore

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/internal/durablebench"
)

// The benchmarks run against a redis-server of their own, on a unix
// socket, without persistence; payloads are 100 bytes. They measure with
// package durablebench, as the bbolt store's benchmarks and twbench do.
// Besides the rate, they report the commands the clients sent per message
// (sent-cmds/msg, EVALSHA mostly) and the commands Redis processed per
// message, those the scripts call included (redis-cmds/msg).
const benchPayload = 100

// benchQueue returns a queue on a store on a client of its own, whose
// commands sent counts.
func benchQueue(b *testing.B, srv *redisServer, queue string, sent *atomic.Int64, qopts ...durable.Option) *durable.Queue {
	b.Helper()
	o := srv.options()
	o.PoolSize = 128
	c := redis.NewClient(o)
	c.AddHook(countHook{n: sent})
	s, err := New(c, queue)
	if err != nil {
		b.Fatal(err)
	}
	q, err := durable.New(s, qopts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = q.Close()
		_ = s.Close()
		_ = c.Close()
	})
	return q
}

// perMessage reports the commands sent and processed per message since
// the counters were sent0 and before.
func perMessage(b *testing.B, c redis.UniversalClient, n int, sent *atomic.Int64, sent0 int64, before serverStats) {
	after := readServerStats(b, c)
	b.ReportMetric(float64(sent.Load()-sent0)/float64(n), "sent-cmds/msg")
	b.ReportMetric(float64(after.commands-before.commands-1)/float64(n), "redis-cmds/msg")
}

// BenchmarkEnqueue is enqueues per second through a queue, from 1, 8 and
// 64 producers at once.
func BenchmarkEnqueue(b *testing.B) {
	for _, producers := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("producers=%d", producers), func(b *testing.B) {
			srv := startRedis(b)
			sent := new(atomic.Int64)
			q := benchQueue(b, srv, "bench", sent)
			c := srv.client(b)
			sent0, before := sent.Load(), readServerStats(b, c)
			b.ResetTimer()
			rate, err := durablebench.EnqueueRate(context.Background(), q, "m", producers, b.N, benchPayload)
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric(rate, "enqueues/s")
			perMessage(b, c, b.N, sent, sent0, before)
		})
	}
}

// BenchmarkReceiveAck is Receive then Ack of messages already due, by 8
// consumers at once: 8 goroutines on one queue, or one goroutine on each
// of 8 queues with clients of their own (as 8 processes would be).
func BenchmarkReceiveAck(b *testing.B) {
	for _, queues := range []int{1, 8} {
		b.Run(fmt.Sprintf("queues=%d", queues), func(b *testing.B) {
			srv := startRedis(b)
			c := srv.client(b)
			s, err := New(c, "bench")
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			if err := durablebench.PreloadStore(ctx, s, "m", b.N, benchPayload, func(int) time.Time { return time.Time{} }); err != nil {
				b.Fatal(err)
			}
			sent := new(atomic.Int64)
			var qs []*durable.Queue
			for range queues {
				qs = append(qs, benchQueue(b, srv, "bench", sent))
			}
			sent0, before := sent.Load(), readServerStats(b, c)
			b.ResetTimer()
			start := time.Now()
			// Each queue's goroutines take their share of b.N.
			errs := make([]error, queues)
			var wg sync.WaitGroup
			for i, q := range qs {
				n := b.N / queues
				if i < b.N%queues {
					n++
				}
				wg.Go(func() {
					_, errs[i] = durablebench.ReceiveAckRate(ctx, q, 8/queues, n)
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "receive+acks/s")
			perMessage(b, c, b.N, sent, sent0, before)
		})
	}
}

// BenchmarkLateness is how late messages are received by 8 consumers
// (goroutines of one queue), after their due time, at 2,000 and 10,000
// messages due a second, over one second (longer with -benchtime Nx for
// N above the rate).
func BenchmarkLateness(b *testing.B) {
	for _, rate := range []int{2000, 10_000} {
		b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) {
			srv := startRedis(b)
			sent := new(atomic.Int64)
			q := benchQueue(b, srv, "bench", sent)
			n := max(b.N, rate)
			window := time.Duration(n) * time.Second / time.Duration(rate)
			late, err := durablebench.Lateness(context.Background(), q, "m", 8, n, window)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(durablebench.Percentile(late, 0.5).Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(durablebench.Percentile(late, 0.99).Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(late[len(late)-1].Microseconds())/1000, "max-ms")
		})
	}
}

// BenchmarkIdle is the load on Redis of 10 idle consumers while a million
// messages are pending, none due for a day
// (REDISSTORE_BENCH_IDLE_MESSAGES sets another count): the commands they
// send and Redis processes a second, and Redis's CPU time a second, over
// 10 seconds. Run it with -benchtime 1x: loading the messages takes a
// few seconds.
func BenchmarkIdle(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv("REDISSTORE_BENCH_IDLE_MESSAGES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	srv := startRedis(b)
	c := srv.client(b)
	s, err := New(c, "idle")
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	due := time.Now().Add(24 * time.Hour)
	if err := durablebench.PreloadStore(ctx, s, "m", n, benchPayload, func(int) time.Time { return due }); err != nil {
		b.Fatal(err)
	}
	sent, stop := idleConsumers(b, srv, "idle", 10)
	defer stop()
	time.Sleep(time.Second)
	b.ResetTimer()
	const window = 10 * time.Second
	sent0, before := sent.Load(), readServerStats(b, c)
	time.Sleep(window)
	sent1, after := sent.Load(), readServerStats(b, c)
	b.StopTimer()
	secs := window.Seconds()
	b.ReportMetric(float64(sent1-sent0)/secs, "sent-cmds/s")
	b.ReportMetric(float64(after.commands-before.commands-1)/secs, "redis-cmds/s")
	b.ReportMetric(float64((after.cpu-before.cpu).Microseconds())/1000/secs, "redis-cpu-ms/s")
}
