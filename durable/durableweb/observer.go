package durableweb

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// latencies is how many of the latest deliveries' lateness an Observer
// keeps for its percentiles.
const latencies = 4096

// Observer counts what a queue does, for a Dashboard: pass it to
// durable.WithObserver when making the queue, and to WithObserver when
// making the dashboard. It is safe for concurrent use, and quick: Observe
// adds to counters and, for a delivery, writes its lateness into a ring.
// The zero Observer is ready to use.
type Observer struct {
	enqueued, delivered, acked, retried, died atomic.Int64

	mu       sync.Mutex
	lateness [latencies]time.Duration
	n        int // how many lateness values were written, ever
}

var _ durable.Observer = (*Observer)(nil)

// NewObserver returns an Observer with its counters at zero.
func NewObserver() *Observer { return new(Observer) }

// Observe counts e.
func (o *Observer) Observe(e durable.Event) {
	n := int64(max(e.N, 1))
	switch e.Kind {
	case durable.EventEnqueued:
		o.enqueued.Add(n)
	case durable.EventDelivered:
		o.delivered.Add(n)
		o.mu.Lock()
		o.lateness[o.n%latencies] = e.Lateness
		o.n++
		o.mu.Unlock()
	case durable.EventAcked:
		o.acked.Add(n)
	case durable.EventRetried:
		o.retried.Add(n)
	case durable.EventDead:
		o.died.Add(n)
	}
}

// Counts are the totals an Observer counted since it was made.
type Counts struct {
	Enqueued  int64 `json:"enqueued"`
	Delivered int64 `json:"delivered"`
	Acked     int64 `json:"acked"`
	Retried   int64 `json:"retried"`
	Died      int64 `json:"died"`
}

// Counts returns the totals counted so far.
func (o *Observer) Counts() Counts {
	return Counts{
		Enqueued:  o.enqueued.Load(),
		Delivered: o.delivered.Load(),
		Acked:     o.acked.Load(),
		Retried:   o.retried.Load(),
		Died:      o.died.Load(),
	}
}

// Lateness is how late the latest deliveries were, after their due time.
type Lateness struct {
	// N is how many deliveries the percentiles are over (the latest, up
	// to 4096); the durations are zero when it is 0.
	N                  int
	P50, P90, P99, Max time.Duration
}

// Lateness returns the percentiles of the latest deliveries' lateness.
func (o *Observer) Lateness() Lateness {
	o.mu.Lock()
	k := min(o.n, latencies)
	v := slices.Clone(o.lateness[:k])
	o.mu.Unlock()
	if k == 0 {
		return Lateness{}
	}
	slices.Sort(v)
	at := func(p float64) time.Duration { return v[min(k-1, int(p*float64(k)))] }
	return Lateness{N: k, P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: v[k-1]}
}
