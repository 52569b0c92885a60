package durableweb

import (
	"context"
	"strings"
	"time"
)

// Option configures a Dashboard.
type Option func(*config)

type config struct {
	readOnly bool
	every    time.Duration
	history  time.Duration
	ctx      context.Context
	observer *Observer
	pageSize int
	trusted  map[string]bool
}

func defaultConfig() config {
	return config{
		every:    5 * time.Second,
		history:  time.Hour,
		ctx:      context.Background(),
		pageSize: 25,
	}
}

// ReadOnly serves no action: no requeue, cancel, enqueue, pause or resume.
// The pages show no forms, and the handler answers 403 Forbidden to the
// action paths, whatever the method.
func ReadOnly() Option { return func(c *config) { c.readOnly = true } }

// WithSampleInterval sets how often the dashboard records the queue's
// Stats for its chart: every 5 seconds by default. It keeps the last
// hour's samples, at most 7201 of them (so below half a second the chart
// covers less than an hour). A d that is not positive keeps the default.
func WithSampleInterval(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.every = d
		}
	}
}

// WithContext ends the dashboard's sampler when ctx is done. Without it
// the sampler ends when the queue is closed (its Stats returns
// durable.ErrClosed) or when Dashboard.Close is called.
func WithContext(ctx context.Context) Option {
	return func(c *config) {
		if ctx != nil {
			c.ctx = ctx
		}
	}
}

// WithObserver shows what o heard from the queue: throughput (enqueued,
// delivered, acked, retried, died) and lateness percentiles. Give the same
// o to durable.WithObserver when making the queue.
func WithObserver(o *Observer) Option { return func(c *config) { c.observer = o } }

// WithTrustedOrigins lets actions come from pages of these origins
// ("https://ops.example.com": scheme, host and port, as browsers send in
// the Origin header) besides the dashboard's own, which is the only one by
// default: for a proxy that gives the handler another Host than the
// browser's. The forms' token is still required.
func WithTrustedOrigins(origins ...string) Option {
	return func(c *config) {
		if c.trusted == nil {
			c.trusted = make(map[string]bool)
		}
		for _, o := range origins {
			c.trusted[strings.TrimSuffix(o, "/")] = true
		}
	}
}
