package durableotel_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/durableotel"
)

// A queue reports through OpenTelemetry: here to a manual reader, in a
// program to the exporter of its choice (Prometheus, OTLP...).
func Example() {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())
	metrics, err := durableotel.New(provider, durableotel.WithQueueName("orders"))
	if err != nil {
		log.Fatal(err)
	}

	dir, err := os.MkdirTemp("", "orders")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	q, err := durable.Open(filepath.Join(dir, "orders.db"), durable.WithObserver(metrics))
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()
	unregister, err := metrics.ObserveStats(q)
	if err != nil {
		log.Fatal(err)
	}
	defer unregister()

	ctx, stop := context.WithCancel(context.Background())
	for _, id := range []string{"order-1", "order-2"} {
		if err := q.Enqueue(ctx, durable.Message{ID: id, Due: time.Now()}); err != nil {
			log.Fatal(err)
		}
	}
	handled := 0
	if err := q.Run(ctx, 1, func(context.Context, *durable.Delivery) error {
		if handled++; handled == 2 {
			stop()
		}
		return nil
	}); err != nil {
		log.Fatal(err)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		log.Fatal(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch data := m.Data.(type) {
		case metricdata.Sum[int64]:
			fmt.Println(m.Name, data.DataPoints[0].Value)
		case metricdata.Gauge[int64]:
			fmt.Println(m.Name, data.DataPoints[0].Value)
		case metricdata.Histogram[float64]:
			fmt.Println(m.Name, "count", data.DataPoints[0].Count)
		}
	}
	// Unordered output:
	// durable.messages.enqueued 2
	// durable.messages.delivered 2
	// durable.messages.acked 2
	// durable.delivery.lateness count 2
	// durable.handler.duration count 2
	// durable.messages.pending 0
	// durable.messages.in_flight 0
	// durable.messages.dead_letters 0
}
