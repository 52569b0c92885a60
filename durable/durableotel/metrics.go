// Package durableotel reports what a durable.Queue does as OpenTelemetry
// metrics: counts of messages enqueued, delivered, acked, retried,
// snoozed, dead, of leases lost and of failed store calls by operation; the lateness of
// each delivery and the duration of each handler of Run as histograms;
// and the messages pending, in flight and dead as gauges. Prometheus
// users read them through OpenTelemetry's Prometheus exporter.
//
// The counters and histograms carry a "kind" attribute, the Kind of the
// message (see durable.Kind), for the events of a message that has one:
// for the first MaxKinds kinds a Metrics sees; the kinds seen after those
// are reported as OtherKind, so that the number of series stays bounded
// whatever the program does with kinds.
//
//	m, err := durableotel.New(otel.GetMeterProvider(), durableotel.WithQueueName("orders"))
//	q, err := durable.Open(path, durable.WithObserver(m))
//	unregister, err := m.ObserveStats(q)
//
// It is a module of its own, so that package durable does not depend on
// OpenTelemetry.
package durableotel

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// ScopeName is the instrumentation scope of the meter the metrics come
// from.
const ScopeName = "github.com/seed64e23a5c/timingwheel/durable/durableotel"

// DefaultStatsInterval is how often, at most, the gauges read the queue's
// Stats by default.
const DefaultStatsInterval = 5 * time.Second

// ErrInvalidOption is wrapped by the error New returns for a bad option.
var ErrInvalidOption = errors.New("durableotel: invalid option")

// MaxKinds is how many kinds, at most, a Metrics reports under their own
// name in the "kind" attribute: the first MaxKinds it sees.
const MaxKinds = 100

// OtherKind is the "kind" attribute of the events of the kinds a Metrics
// saw after its first MaxKinds.
const OtherKind = "other"

// Option configures New.
type Option func(*config)

type config struct {
	queue         string
	statsInterval time.Duration
}

// WithQueueName sets the value of the "queue" attribute every metric
// carries, so that several queues can share a meter provider. By default
// there is no such attribute.
func WithQueueName(name string) Option { return func(c *config) { c.queue = name } }

// WithStatsInterval sets how often, at most, the gauges read the queue's
// Stats (a store round trip): between two reads, a collection reports the
// last values read. DefaultStatsInterval by default.
func WithStatsInterval(d time.Duration) Option { return func(c *config) { c.statsInterval = d } }

// Metrics is a durable.Observer that records a queue's events as
// OpenTelemetry metrics. Give it to the queue with durable.WithObserver;
// its methods are safe for concurrent use.
type Metrics struct {
	meter metric.Meter
	cfg   config
	attrs metric.MeasurementOption // the base attributes, for the gauges

	enqueued, delivered, acked, retried, snoozed, dead, leaseLost metric.Int64Counter
	storeErrors                                                   metric.Int64Counter
	base                                                          []attribute.KeyValue
	lateness, handlerDuration                                     metric.Float64Histogram

	// The attribute sets of the events, by message kind, made once per
	// kind: none (""), each of the first MaxKinds kinds seen (in kinds,
	// under kindsMu for the writes), and OtherKind once full.
	none, other *kindAttrs
	kinds       sync.Map // kind name -> *kindAttrs
	kindsMu     sync.Mutex
	nKinds      int         // under kindsMu
	full        atomic.Bool // nKinds reached MaxKinds
}

// kindAttrs are the attribute sets of the events of one kind.
type kindAttrs struct {
	attrs                    metric.MeasurementOption
	handledOK, handledFailed metric.MeasurementOption
	kv                       []attribute.KeyValue // the base and the kind, for store errors
}

// newKindAttrs returns the attribute sets of kind ("" for none) on base.
func newKindAttrs(base []attribute.KeyValue, kind string) *kindAttrs {
	kv := append([]attribute.KeyValue(nil), base...)
	if kind != "" {
		kv = append(kv, attribute.String("kind", kind))
	}
	with := func(extra ...attribute.KeyValue) metric.MeasurementOption {
		return metric.WithAttributeSet(attribute.NewSet(append(append([]attribute.KeyValue(nil), kv...), extra...)...))
	}
	return &kindAttrs{attrs: with(), handledOK: with(attribute.String("outcome", "ok")),
		handledFailed: with(attribute.String("outcome", "error")), kv: kv}
}

// attrsOf returns the attribute sets of the events of kind: its own for
// the first MaxKinds kinds seen, OtherKind's after.
func (m *Metrics) attrsOf(kind string) *kindAttrs {
	if kind == "" {
		return m.none
	}
	if a, ok := m.kinds.Load(kind); ok {
		return a.(*kindAttrs)
	}
	if m.full.Load() {
		return m.other
	}
	m.kindsMu.Lock()
	defer m.kindsMu.Unlock()
	if a, ok := m.kinds.Load(kind); ok {
		return a.(*kindAttrs)
	}
	if m.nKinds >= MaxKinds {
		return m.other
	}
	a := newKindAttrs(m.base, kind)
	m.kinds.Store(kind, a)
	if m.nKinds++; m.nKinds == MaxKinds {
		m.full.Store(true)
	}
	return a
}

// New returns Metrics whose instruments come from mp's meter named
// ScopeName.
func New(mp metric.MeterProvider, opts ...Option) (*Metrics, error) {
	cfg := config{statsInterval: DefaultStatsInterval}
	for _, o := range opts {
		o(&cfg)
	}
	if mp == nil {
		return nil, fmt.Errorf("%w: nil MeterProvider", ErrInvalidOption)
	}
	if cfg.statsInterval <= 0 {
		return nil, fmt.Errorf("%w: stats interval %v, want more than 0", ErrInvalidOption, cfg.statsInterval)
	}
	m := &Metrics{meter: mp.Meter(ScopeName), cfg: cfg}
	var base []attribute.KeyValue
	if cfg.queue != "" {
		base = append(base, attribute.String("queue", cfg.queue))
	}
	m.base = base
	m.attrs = metric.WithAttributeSet(attribute.NewSet(base...))
	m.none, m.other = newKindAttrs(base, ""), newKindAttrs(base, OtherKind)

	var err error
	counter := func(name, desc string) metric.Int64Counter {
		c, e := m.meter.Int64Counter(name, metric.WithDescription(desc), metric.WithUnit("{message}"))
		err = errors.Join(err, e)
		return c
	}
	m.enqueued = counter("durable.messages.enqueued", "Messages written by Enqueue, new or replacing another.")
	m.delivered = counter("durable.messages.delivered", "Messages handed out by Receive.")
	m.acked = counter("durable.messages.acked", "Messages deleted by an Ack.")
	m.retried = counter("durable.messages.retried", "Failed attempts to be delivered again: Retry, or an expired lease.")
	m.snoozed = counter("durable.messages.snoozed", "Deliveries whose handler snoozed them: due again later, the attempt not counted.")
	m.dead = counter("durable.messages.dead", "Messages sent to the dead letters: after their last attempt, or by a permanent error.")
	m.leaseLost = counter("durable.leases.lost", "Acks, Retries and Extends that found their lease lost.")
	m.storeErrors, err = m.meter.Int64Counter("durable.store.errors", metric.WithUnit("{error}"),
		metric.WithDescription("Store calls the queue made for itself that failed (and were retried), by operation: claim, confirm, ack, retry, extend, release, reap, series."))
	histogram := func(name, desc string) metric.Float64Histogram {
		h, e := m.meter.Float64Histogram(name, metric.WithDescription(desc), metric.WithUnit("s"),
			metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60))
		err = errors.Join(err, e)
		return h
	}
	m.lateness = histogram("durable.delivery.lateness", "How long after its due time each message was handed out.")
	m.handlerDuration = histogram("durable.handler.duration", "How long each handler of Run took, by outcome.")
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Observe records e. It implements durable.Observer.
func (m *Metrics) Observe(e durable.Event) {
	ctx := context.Background()
	n := int64(e.N)
	a := m.attrsOf(e.MessageKind)
	switch e.Kind {
	case durable.EventEnqueued:
		m.enqueued.Add(ctx, n, a.attrs)
	case durable.EventDelivered:
		m.delivered.Add(ctx, n, a.attrs)
		m.lateness.Record(ctx, e.Lateness.Seconds(), a.attrs)
	case durable.EventAcked:
		m.acked.Add(ctx, n, a.attrs)
	case durable.EventRetried:
		m.retried.Add(ctx, n, a.attrs)
	case durable.EventSnoozed:
		m.snoozed.Add(ctx, n, a.attrs)
	case durable.EventDead:
		m.dead.Add(ctx, n, a.attrs)
	case durable.EventLeaseLost:
		m.leaseLost.Add(ctx, n, a.attrs)
	case durable.EventHandled:
		outcome := a.handledOK
		if e.Err != nil {
			outcome = a.handledFailed
		}
		m.handlerDuration.Record(ctx, e.Duration.Seconds(), outcome)
	case durable.EventStoreError:
		attrs := append(append(make([]attribute.KeyValue, 0, len(a.kv)+1), a.kv...), attribute.String("operation", e.Op))
		m.storeErrors.Add(ctx, n, metric.WithAttributeSet(attribute.NewSet(attrs...)))
	}
}

// ObserveStats registers the gauges durable.messages.pending,
// durable.messages.in_flight and durable.messages.dead_letters, read from
// q.Stats at most once per stats interval. Call unregister before closing
// q (or when q is closed, collections skip the gauges).
func (m *Metrics) ObserveStats(q *durable.Queue) (unregister func() error, err error) {
	gauge := func(name, desc string) metric.Int64ObservableGauge {
		g, e := m.meter.Int64ObservableGauge(name, metric.WithDescription(desc), metric.WithUnit("{message}"))
		err = errors.Join(err, e)
		return g
	}
	pending := gauge("durable.messages.pending", "Messages waiting for their due time or a consumer.")
	inFlight := gauge("durable.messages.in_flight", "Messages leased to a consumer.")
	dead := gauge("durable.messages.dead_letters", "Messages in the dead letters.")
	if err != nil {
		return nil, err
	}
	stats := &cachedStats{q: q, every: m.cfg.statsInterval}
	reg, err := m.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		st, err := stats.read(ctx)
		if err != nil {
			if errors.Is(err, durable.ErrClosed) {
				return nil
			}
			return err
		}
		o.ObserveInt64(pending, int64(st.Pending), m.attrs)
		o.ObserveInt64(inFlight, int64(st.InFlight), m.attrs)
		o.ObserveInt64(dead, int64(st.Dead), m.attrs)
		return nil
	}, pending, inFlight, dead)
	if err != nil {
		return nil, err
	}
	return reg.Unregister, nil
}

// cachedStats reads a queue's Stats at most once per every.
type cachedStats struct {
	q     *durable.Queue
	every time.Duration

	mu     sync.Mutex
	last   durable.Stats
	readAt time.Time // zero before the first read
	reads  int       // for tests
}

func (c *cachedStats) read(ctx context.Context) (durable.Stats, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.readAt.IsZero() && time.Since(c.readAt) < c.every {
		return c.last, nil
	}
	st, err := c.q.Stats(ctx)
	if err != nil {
		return durable.Stats{}, err
	}
	c.last, c.readAt = st, time.Now()
	c.reads++
	return st, nil
}
