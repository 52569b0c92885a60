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
	// kindCount and kindBytes bound the overview's count by kind: how
	// many messages, and bytes of their payloads, it reads of each state
	// (no count if kindCount is 0).
	kindCount int
	kindBytes int
}

func defaultConfig() config {
	return config{
		every:    5 * time.Second,
		history:  time.Hour,
		ctx:      context.Background(),
		pageSize: 25,

		kindCount: defaultKindCount,
		kindBytes: defaultKindBytes,
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

// WithKindCounts bounds the overview's counts of the pending and the dead
// messages by kind, which it makes at each load by reading the messages
// with Queue.List (no store counts them by kind): it reads at most n
// messages of each state (10,000 by default), and stops after 32 MiB of
// their payloads, then says the counts are of the messages read. An n of
// 0 or less turns the counts off: for a store whose List is costly.
func WithKindCounts(n int) Option {
	return func(c *config) { c.kindCount = max(n, 0) }
}
