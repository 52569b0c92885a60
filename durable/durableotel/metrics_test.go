package durableotel_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/durableotel"
)

// collect reads every metric of reader, by name.
func collect(t *testing.T, reader *sdkmetric.ManualReader) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		assert.Equal(t, durableotel.ScopeName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

func sum(t *testing.T, data metricdata.Aggregation) int64 {
	t.Helper()
	s, ok := data.(metricdata.Sum[int64])
	require.True(t, ok, "%T is not an int64 sum", data)
	var total int64
	for _, p := range s.DataPoints {
		v, _ := p.Attributes.Value("queue")
		assert.Equal(t, "orders", v.AsString())
		total += p.Value
	}
	return total
}

func gauge(t *testing.T, data metricdata.Aggregation) int64 {
	t.Helper()
	g, ok := data.(metricdata.Gauge[int64])
	require.True(t, ok, "%T is not an int64 gauge", data)
	require.Len(t, g.DataPoints, 1)
	return g.DataPoints[0].Value
}

func newMetrics(t *testing.T, opts ...durableotel.Option) (*durableotel.Metrics, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { assert.NoError(t, provider.Shutdown(context.Background())) })
	m, err := durableotel.New(provider, append([]durableotel.Option{durableotel.WithQueueName("orders")}, opts...)...)
	require.NoError(t, err)
	return m, reader
}

func TestEventsBecomeCountersAndHistograms(t *testing.T) {
	m, reader := newMetrics(t)
	m.Observe(durable.Event{Kind: durable.EventEnqueued, ID: "a", N: 1})
	m.Observe(durable.Event{Kind: durable.EventEnqueued, ID: "b", N: 1})
	m.Observe(durable.Event{Kind: durable.EventDelivered, ID: "a", N: 1, Attempt: 1, Lateness: 2 * time.Millisecond})
	m.Observe(durable.Event{Kind: durable.EventAcked, ID: "a", N: 1})
	m.Observe(durable.Event{Kind: durable.EventRetried, N: 3})
	m.Observe(durable.Event{Kind: durable.EventDead, N: 2})
	m.Observe(durable.Event{Kind: durable.EventLeaseLost, ID: "c", N: 1})
	m.Observe(durable.Event{Kind: durable.EventHandled, ID: "a", N: 1, Duration: 40 * time.Millisecond})
	m.Observe(durable.Event{Kind: durable.EventHandled, ID: "b", N: 1, Duration: time.Second, Err: errors.New("boom")})

	got := collect(t, reader)
	assert.EqualValues(t, 2, sum(t, got["durable.messages.enqueued"]))
	assert.EqualValues(t, 1, sum(t, got["durable.messages.delivered"]))
	assert.EqualValues(t, 1, sum(t, got["durable.messages.acked"]))
	assert.EqualValues(t, 3, sum(t, got["durable.messages.retried"]))
	assert.EqualValues(t, 2, sum(t, got["durable.messages.dead"]))
	assert.EqualValues(t, 1, sum(t, got["durable.leases.lost"]))

	lateness, ok := got["durable.delivery.lateness"].(metricdata.Histogram[float64])
	require.True(t, ok)
	require.Len(t, lateness.DataPoints, 1)
	assert.EqualValues(t, 1, lateness.DataPoints[0].Count)
	assert.InDelta(t, 0.002, lateness.DataPoints[0].Sum, 1e-9)

	handled, ok := got["durable.handler.duration"].(metricdata.Histogram[float64])
	require.True(t, ok)
	byOutcome := map[string]float64{}
	for _, p := range handled.DataPoints {
		v, _ := p.Attributes.Value("outcome")
		byOutcome[v.AsString()] = p.Sum
	}
	assert.Equal(t, map[string]float64{"ok": 0.04, "error": 1}, byOutcome)
}

func openQueue(t *testing.T, m *durableotel.Metrics) *durable.Queue {
	t.Helper()
	q, err := durable.Open(filepath.Join(t.TempDir(), "orders.db"), durable.WithObserver(m))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, q.Close()) })
	return q
}

func TestGaugesReadStatsAtMostOncePerInterval(t *testing.T) {
	ctx := context.Background()
	m, reader := newMetrics(t, durableotel.WithStatsInterval(time.Hour))
	q := openQueue(t, m)
	unregister, err := m.ObserveStats(q)
	require.NoError(t, err)
	defer func() { assert.NoError(t, unregister()) }()

	got := collect(t, reader)
	assert.EqualValues(t, 0, gauge(t, got["durable.messages.pending"]))
	require.NoError(t, q.Enqueue(ctx, durable.Message{ID: "a", Due: time.Now().Add(time.Hour)}))
	got = collect(t, reader)
	assert.EqualValues(t, 0, gauge(t, got["durable.messages.pending"]), "read again within the interval")
}

func TestGaugesFollowTheQueue(t *testing.T) {
	ctx := context.Background()
	m, reader := newMetrics(t, durableotel.WithStatsInterval(time.Nanosecond))
	q := openQueue(t, m)
	unregister, err := m.ObserveStats(q)
	require.NoError(t, err)
	defer func() { assert.NoError(t, unregister()) }()

	for _, id := range []string{"a", "b", "c"} {
		require.NoError(t, q.Enqueue(ctx, durable.Message{ID: id, Due: time.Now()}))
	}
	d, err := q.Receive(ctx)
	require.NoError(t, err)
	got := collect(t, reader)
	assert.EqualValues(t, 2, gauge(t, got["durable.messages.pending"]))
	assert.EqualValues(t, 1, gauge(t, got["durable.messages.in_flight"]))
	assert.EqualValues(t, 0, gauge(t, got["durable.messages.dead_letters"]))
	require.NoError(t, d.Ack(ctx))
}

func TestNewRejectsBadOptions(t *testing.T) {
	_, err := durableotel.New(nil)
	require.ErrorIs(t, err, durableotel.ErrInvalidOption)
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	_, err = durableotel.New(provider, durableotel.WithStatsInterval(0))
	require.ErrorIs(t, err, durableotel.ErrInvalidOption)
	assert.Contains(t, err.Error(), "stats interval")
}

func TestStoreErrorsAreCountedByOperation(t *testing.T) {
	m, reader := newMetrics(t)
	down := errors.New("connection refused")
	m.Observe(durable.Event{Kind: durable.EventStoreError, Op: durable.OpClaim, N: 1, Err: down})
	m.Observe(durable.Event{Kind: durable.EventStoreError, Op: durable.OpClaim, N: 1, Err: down})
	m.Observe(durable.Event{Kind: durable.EventStoreError, Op: durable.OpAck, ID: "a", Attempt: 1, N: 1, Err: down})

	got := collect(t, reader)
	assert.EqualValues(t, 3, sum(t, got["durable.store.errors"]))
	s, ok := got["durable.store.errors"].(metricdata.Sum[int64])
	require.True(t, ok)
	byOp := map[string]int64{}
	for _, p := range s.DataPoints {
		v, _ := p.Attributes.Value("operation")
		byOp[v.AsString()] = p.Value
	}
	assert.Equal(t, map[string]int64{"claim": 2, "ack": 1}, byOp)
}

// byKind returns the values of the sum data's points by their "kind"
// attribute ("" for none).
func byKind(t *testing.T, data metricdata.Aggregation) map[string]int64 {
	t.Helper()
	s, ok := data.(metricdata.Sum[int64])
	require.True(t, ok, "%T is not an int64 sum", data)
	out := map[string]int64{}
	for _, p := range s.DataPoints {
		v, _ := p.Attributes.Value("kind")
		out[v.AsString()] += p.Value
	}
	return out
}

// TestEventsCarryTheirKind: every counter and histogram says the kind of
// the message; events without one (a reap) carry no kind attribute.
func TestEventsCarryTheirKind(t *testing.T) {
	m, reader := newMetrics(t)
	down := errors.New("connection refused")
	for _, k := range []string{"order.close", "order.remind"} {
		m.Observe(durable.Event{Kind: durable.EventEnqueued, ID: "a", MessageKind: k, N: 1})
		m.Observe(durable.Event{Kind: durable.EventDelivered, ID: "a", MessageKind: k, N: 1, Lateness: time.Millisecond})
		m.Observe(durable.Event{Kind: durable.EventHandled, ID: "a", MessageKind: k, N: 1, Duration: time.Second})
		m.Observe(durable.Event{Kind: durable.EventHandled, ID: "a", MessageKind: k, N: 1, Duration: time.Second, Err: down})
		m.Observe(durable.Event{Kind: durable.EventAcked, ID: "a", MessageKind: k, N: 1})
		m.Observe(durable.Event{Kind: durable.EventRetried, ID: "a", MessageKind: k, N: 1})
		m.Observe(durable.Event{Kind: durable.EventSnoozed, ID: "a", MessageKind: k, N: 1})
		m.Observe(durable.Event{Kind: durable.EventDead, ID: "a", MessageKind: k, N: 1})
		m.Observe(durable.Event{Kind: durable.EventLeaseLost, ID: "a", MessageKind: k, N: 1})
		m.Observe(durable.Event{Kind: durable.EventStoreError, Op: durable.OpAck, ID: "a", MessageKind: k, N: 1, Err: down})
	}
	m.Observe(durable.Event{Kind: durable.EventRetried, N: 3}) // a reap
	m.Observe(durable.Event{Kind: durable.EventStoreError, Op: durable.OpClaim, N: 1, Err: down})

	got := collect(t, reader)
	both := map[string]int64{"order.close": 1, "order.remind": 1}
	for _, name := range []string{"durable.messages.enqueued", "durable.messages.delivered", "durable.messages.acked",
		"durable.messages.snoozed", "durable.messages.dead", "durable.leases.lost"} {
		assert.Equal(t, both, byKind(t, got[name]), name)
	}
	assert.Equal(t, map[string]int64{"order.close": 1, "order.remind": 1, "": 3}, byKind(t, got["durable.messages.retried"]))
	assert.Equal(t, map[string]int64{"order.close": 1, "order.remind": 1, "": 1}, byKind(t, got["durable.store.errors"]))
	s := got["durable.store.errors"].(metricdata.Sum[int64])
	for _, p := range s.DataPoints {
		_, hasOp := p.Attributes.Value("operation")
		assert.True(t, hasOp, "the operation beside the kind")
	}
	for _, name := range []string{"durable.delivery.lateness", "durable.handler.duration"} {
		h, ok := got[name].(metricdata.Histogram[float64])
		require.True(t, ok, name)
		counts := map[string]uint64{}
		for _, p := range h.DataPoints {
			k, _ := p.Attributes.Value("kind")
			o, _ := p.Attributes.Value("outcome")
			counts[k.AsString()+" "+o.AsString()] += p.Count
		}
		if name == "durable.handler.duration" {
			assert.Equal(t, map[string]uint64{"order.close ok": 1, "order.close error": 1, "order.remind ok": 1, "order.remind error": 1}, counts, name)
		} else {
			assert.Equal(t, map[string]uint64{"order.close ": 1, "order.remind ": 1}, counts, name)
		}
	}
}

// TestKindsAreBounded: the kinds beyond the first MaxKinds seen are
// reported as OtherKind; the first keep their names.
func TestKindsAreBounded(t *testing.T) {
	m, reader := newMetrics(t)
	kind := func(i int) string { return fmt.Sprintf("kind-%03d", i) }
	for i := range durableotel.MaxKinds + 50 {
		m.Observe(durable.Event{Kind: durable.EventEnqueued, ID: "a", MessageKind: kind(i), N: 1})
	}
	m.Observe(durable.Event{Kind: durable.EventEnqueued, ID: "a", MessageKind: kind(7), N: 1})                    // seen before the bound
	m.Observe(durable.Event{Kind: durable.EventEnqueued, ID: "a", MessageKind: kind(durableotel.MaxKinds), N: 1}) // after
	m.Observe(durable.Event{Kind: durable.EventEnqueued, ID: "a", N: 1})                                          // none

	want := map[string]int64{durableotel.OtherKind: 51, "": 1}
	for i := range durableotel.MaxKinds {
		want[kind(i)] = 1
	}
	want[kind(7)] = 2
	assert.Equal(t, want, byKind(t, collect(t, reader)["durable.messages.enqueued"]))
}

// TestKindsAreBoundedUnderConcurrentUse: however many goroutines see new
// kinds at once, at most MaxKinds get their own name.
func TestKindsAreBoundedUnderConcurrentUse(t *testing.T) {
	m, reader := newMetrics(t)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 40 {
				m.Observe(durable.Event{Kind: durable.EventAcked, ID: "a", MessageKind: fmt.Sprintf("k-%d-%d", g, i), N: 1})
			}
		})
	}
	wg.Wait()
	got := byKind(t, collect(t, reader)["durable.messages.acked"])
	assert.Len(t, got, durableotel.MaxKinds+1, "MaxKinds kinds and OtherKind")
	assert.EqualValues(t, 8*40-durableotel.MaxKinds, got[durableotel.OtherKind])
}
