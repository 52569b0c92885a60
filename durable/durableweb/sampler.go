package durableweb

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// A sample is the queue's Stats at one instant, and the observer's totals
// then (zero without an observer).
type sample struct {
	At time.Time
	durable.Stats
	Counts
}

// ring keeps the latest samples, oldest first.
type ring struct {
	mu   sync.Mutex
	buf  []sample
	next int // where the next sample goes
	full bool
	err  error // the last sampling error, nil after a success
}

func newRing(n int) *ring { return &ring{buf: make([]sample, max(n, 2))} }

func (r *ring) add(s sample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf[r.next] = s
	r.next = (r.next + 1) % len(r.buf)
	r.full = r.full || r.next == 0
	r.err = nil
}

func (r *ring) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
}

// samples returns the samples, oldest first.
func (r *ring) samples() []sample {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.full {
		return append([]sample(nil), r.buf[:r.next]...)
	}
	return append(append([]sample(nil), r.buf[r.next:]...), r.buf[:r.next]...)
}

// sampleTimeout bounds one Stats call of the sampler.
const sampleTimeout = 5 * time.Second

// sample records the queue's Stats once, and reports whether the sampler
// should go on (not after durable.ErrClosed).
func (d *Dashboard) sample(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, sampleTimeout)
	defer cancel()
	st, err := d.q.Stats(ctx)
	if err != nil {
		if ctx.Err() == nil || errors.Is(err, durable.ErrClosed) {
			d.ring.fail(err)
		}
		return !errors.Is(err, durable.ErrClosed)
	}
	s := sample{At: time.Now(), Stats: st}
	if d.cfg.observer != nil {
		s.Counts = d.cfg.observer.Counts()
	}
	d.ring.add(s)
	return true
}

// run samples the queue every d.cfg.every until ctx ends or the queue is
// closed.
func (d *Dashboard) run(ctx context.Context) {
	defer close(d.done)
	t := time.NewTicker(d.cfg.every)
	defer t.Stop()
	for d.sample(ctx) {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
