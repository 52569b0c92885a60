package durable_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/boltstore"
	"github.com/seed64e23a5c/timingwheel/internal/durablebench"
)

// The benchmarks write to a file in a temp dir with the default policy,
// SyncAlways: every figure includes its fsyncs. Payloads are 100 bytes.
const benchPayload = 100

func openBench(b *testing.B, opts ...durable.Option) *durable.Queue {
	b.Helper()
	q, err := durable.Open(filepath.Join(b.TempDir(), "bench.db"), opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { q.Close() })
	return q
}

// reportFsyncs reports the commits (one fsync each) of q since commits
// per message.
func reportFsyncs(b *testing.B, q *durable.Queue, commits int64) {
	b.ReportMetric(float64(durable.Commits(q)-commits)/float64(b.N), "fsyncs/msg")
}

// BenchmarkEnqueue is durable enqueues (each fsynced, in group commits)
// from 1, 8 and 64 producers at once.
func BenchmarkEnqueue(b *testing.B) {
	for _, producers := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("producers=%d", producers), func(b *testing.B) {
			q := openBench(b)
			b.ResetTimer()
			commits := durable.Commits(q)
			rate, err := durablebench.EnqueueRate(context.Background(), q, "m", producers, b.N, benchPayload)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(rate, "enqueues/s")
			reportFsyncs(b, q, commits)
		})
	}
}

// BenchmarkReceiveAck is Receive then Ack of messages already due, by 8
// consumers at once.
func BenchmarkReceiveAck(b *testing.B) {
	q := openBench(b)
	ctx := context.Background()
	if err := durablebench.Preload(ctx, q, "m", b.N, benchPayload, func(int) time.Time { return time.Time{} }); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	commits := durable.Commits(q)
	rate, err := durablebench.ReceiveAckRate(ctx, q, 8, b.N)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(rate, "receive+acks/s")
	reportFsyncs(b, q, commits)
}

// BenchmarkLateness is how late messages are received after their due
// time by 8 consumers, at 1,000 and 2,000 messages due a second over two
// seconds: loads well under the receive+ack throughput, so that what it
// measures is the wake-up, not a backlog.
func BenchmarkLateness(b *testing.B) {
	for _, rate := range []int{1000, 2000} {
		b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) { benchLateness(b, rate) })
	}
	// What the fsyncs cost: the tail above is mostly theirs.
	b.Run("rate=2000/SyncNever", func(b *testing.B) { benchLateness(b, 2000, durable.WithSync(durable.SyncNever)) })
}

func benchLateness(b *testing.B, rate int, opts ...durable.Option) {
	q := openBench(b, opts...)
	var late []time.Duration
	for i := 0; b.Loop(); i++ {
		l, err := durablebench.Lateness(context.Background(), q, fmt.Sprint("m", i, "-"), 8, 2*rate, 2*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		late = append(late, l...)
	}
	slices.Sort(late)
	b.ReportMetric(float64(durablebench.Percentile(late, 0.5).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(durablebench.Percentile(late, 0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(late[len(late)-1].Microseconds())/1000, "max-ms")
}

// BenchmarkMillionPending fills a file with 1M messages due in a day, then
// measures reopening it and the memory of the process holding it open.
// Run it alone with -benchtime 1x: filling the file takes a while.
func BenchmarkMillionPending(b *testing.B) {
	const n = 1_000_000
	path := filepath.Join(b.TempDir(), "million.db")
	ctx := context.Background()
	s, err := boltstore.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	day := time.Now().Add(24 * time.Hour)
	err = durablebench.PreloadStore(ctx, s, "m", n, benchPayload, func(i int) time.Time {
		return day.Add(time.Duration(i) * time.Millisecond)
	})
	if err2 := s.Close(); err == nil {
		err = err2
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Run("reopen", func(b *testing.B) {
		for b.Loop() {
			q, err := durable.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			st, err := q.Stats(ctx)
			if err != nil || st.Pending != n {
				b.Fatalf("stats %+v, %v", st, err)
			}
			if err := q.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("memory", func(b *testing.B) {
		before := durablebench.ReadMemory()
		q, err := durable.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer q.Close()
		// Work on it a little: enqueue, receive nothing due, stats.
		for i := range 1000 {
			if err := q.Enqueue(ctx, durable.Message{ID: durablebench.ID("x", i), Due: day}); err != nil {
				b.Fatal(err)
			}
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
		_, _ = q.Receive(rctx)
		cancel()
		for b.Loop() {
			if _, err := q.Stats(ctx); err != nil {
				b.Fatal(err)
			}
		}
		m := durablebench.ReadMemory()
		b.ReportMetric(float64(m.Heap)/(1<<20), "heap-MB")
		b.ReportMetric(float64(m.RSSAnon)/(1<<20), "rss-anon-MB")
		b.ReportMetric(float64(m.RSSFile)/(1<<20), "rss-file-MB")
		b.ReportMetric(float64(m.Heap-min(m.Heap, before.Heap))/(1<<20), "heap-growth-MB")
		if fi, err := os.Stat(path); err == nil {
			b.ReportMetric(float64(fi.Size())/(1<<20), "file-MB")
		}
	})
}
