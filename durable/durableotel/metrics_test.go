package durableotel_test

import (
	"context"
	"errors"
	"path/filepath"
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
