package durable_test

import (
	"context"
	"testing"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/internal/durablebench"
)

// BenchmarkRunVsReceiveLoop is receive+ack of b.N messages already due with
// 8 workers, by a hand-written Receive/Ack loop and by Queue.Run (which
// adds lease keeping, panic recovery and the observer, and claims for
// many workers at once and writes acks in the background), side by side.
func BenchmarkRunVsReceiveLoop(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		consume func(context.Context, *durable.Queue, int, int) (float64, error)
	}{
		{"loop", durablebench.ReceiveAckRate},
		{"run", durablebench.RunRate},
	} {
		b.Run(c.name, func(b *testing.B) {
			q := openBench(b)
			if err := durablebench.Preload(ctx, q, "m", b.N, benchPayload, func(int) time.Time { return time.Time{} }); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			commits := durable.Commits(q)
			rate, err := c.consume(ctx, q, 8, b.N)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(rate, "receive+acks/s")
			reportFsyncs(b, q, commits)
		})
	}
}
