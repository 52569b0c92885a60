package durable

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/seed64e23a5c/timingwheel"
)

// Option configures a Queue, and for Open its file.
type Option func(*config)

type config struct {
	visibility  time.Duration
	maxAttempts int
	backoff     func(attempt int) time.Duration
	clock       clock.Clock
	wheel       *timingwheel.TimingWheel
	logger      *slog.Logger
	observer    Observer
	// storeTimeout bounds each store call of Run and Receive (see
	// WithStoreTimeout); 0 means the default.
	storeTimeout time.Duration
	// claimAhead is how early Receive claims (see claimAhead); tests of
	// other behaviour set it to zero.
	claimAhead time.Duration
	// For Open.
	sync        SyncPolicy
	lockTimeout time.Duration
	retention   Retention
}

func defaultConfig() config {
	return config{
		visibility:  30 * time.Second,
		maxAttempts: 10,
		backoff:     ExponentialBackoff(time.Second, 10*time.Minute),
		lockTimeout: 2 * time.Second,
		claimAhead:  claimAhead,
		retention:   DefaultRetention,
	}
}

func (c *config) validate() error {
	switch {
	case c.visibility <= 0:
		return fmt.Errorf("durable: visibility timeout must be positive, got %v", c.visibility)
	case c.maxAttempts < 1:
		return fmt.Errorf("durable: max attempts must be at least 1, got %d", c.maxAttempts)
	case c.backoff == nil:
		return errors.New("durable: nil back-off function")
	case c.storeTimeout < 0:
		return fmt.Errorf("durable: store timeout must not be negative, got %v", c.storeTimeout)
	}
	return c.retention.Validate()
}

// WithVisibilityTimeout sets how long a delivery's lease lasts before the
// message is delivered again (after the back-off): 30s by default.
func WithVisibilityTimeout(d time.Duration) Option {
	return func(c *config) { c.visibility = d }
}

// WithMaxAttempts sets how many deliveries of a message may fail (by Retry
// or lease expiry) before it goes to the dead letters: 10 by default. A
// message's own MaxAttempts, if above 0, replaces it for that message.
func WithMaxAttempts(n int) Option {
	return func(c *config) { c.maxAttempts = n }
}

// WithBackoff sets the delay before a message is delivered again after
// attempt number attempt (1 on the first delivery) failed. The default is
// ExponentialBackoff(time.Second, 10*time.Minute).
func WithBackoff(f func(attempt int) time.Duration) Option {
	return func(c *config) { c.backoff = f }
}

// WithClock sets the clock, for example a clock.NewMock() in tests. For
// Open it is also the clock of the file's due times and leases. The
// default is the real clock.
func WithClock(c clock.Clock) Option {
	return func(cfg *config) { cfg.clock = c }
}

// WithWheel makes the queue arm its timers on w, shared with other users,
// instead of on a wheel of its own. The queue neither starts nor stops
// w; w must run on the queue's clock.
func WithWheel(w *timingwheel.TimingWheel) Option {
	return func(c *config) { c.wheel = w }
}

// WithLogger sets where the queue reports the store errors it retries
// (while Receive waits) and the messages that die. The default is
// slog.Default(), read when the queue is created; pass a logger with
// slog.DiscardHandler to silence it. The same errors reach the Observer
// (EventStoreError).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// DefaultStoreTimeout is the longest the default bound of each store call
// of Run and Receive may be (see WithStoreTimeout).
const DefaultStoreTimeout = 5 * time.Second

// WithStoreTimeout bounds each store call that Run and Receive make for
// themselves (claim, confirm, ack, retry, extend, release, and each call
// of a reap): the call's ctx gets a deadline d after it starts, so that a
// store that hangs (a server stopped, a network partition that drops
// packets) shows as errors within d, retried with a back-off and
// reported to the Observer (EventStoreError) and the logger, rather than
// as silence. The default, and what 0 gives, is min(DefaultStoreTimeout,
// visibility timeout/4): a hung extension fails well before the lease it
// keeps ends. It does not bound the calls a user makes with a ctx of
// their own (Enqueue, Cancel, Delivery.Ack given a ctx, ...): their ctx
// does.
func WithStoreTimeout(d time.Duration) Option {
	return func(c *config) { c.storeTimeout = d }
}

// callTimeout is the bound of each store call of Run and Receive.
func (c *config) callTimeout() time.Duration {
	if c.storeTimeout > 0 {
		return c.storeTimeout
	}
	return max(min(DefaultStoreTimeout, c.visibility/4), time.Millisecond)
}

// HeldLease is the longest lease of a message that Run holds for a busy
// worker, claimed ahead of its due time (see Run): min(HeldLease,
// visibility timeout/2). It does not grow
// with the visibility timeout, so that after a crash such a message, which
// no handler saw, comes back within it, not after the visibility timeout.
const HeldLease = 2 * time.Second

// heldLease is the lease of a message Run holds (see HeldLease).
func (c *config) heldLease() time.Duration {
	return max(min(HeldLease, c.visibility/2), time.Millisecond)
}

// ExponentialBackoff returns the back-off "exponential with full jitter":
// after attempt n, a delay drawn uniformly from [0, min(max, base·2ⁿ⁻¹)].
// The jitter spreads the retries of messages that failed together, so
// that they do not fail together again.
func ExponentialBackoff(base, max time.Duration) func(attempt int) time.Duration {
	return func(attempt int) time.Duration {
		ceil := max
		if attempt < 1 {
			attempt = 1
		}
		if attempt-1 < 62 && base < max>>(attempt-1) {
			ceil = base << (attempt - 1)
		}
		if ceil <= 0 {
			return 0
		}
		return rand.N(min(ceil, math.MaxInt64-1) + 1)
	}
}
