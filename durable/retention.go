package durable

import (
	"time"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// Default dead-letter retention (see WithDeadLetterRetention).
const (
	DefaultDeadLetterCount = store.DefaultDeadLetterCount
	DefaultDeadLetterAge   = store.DefaultDeadLetterAge
)

// DefaultRetention is the retention of a queue given no
// WithDeadLetterRetention: DefaultDeadLetterCount messages,
// DefaultDeadLetterAge of age.
var DefaultRetention = store.Retention{MaxCount: DefaultDeadLetterCount, MaxAge: DefaultDeadLetterAge}

// Retention bounds the dead letters a store keeps.
//
// Deprecated: use store.Retention; a queue's is set by
// WithDeadLetterRetention.
type Retention = store.Retention

// WithDeadLetterRetention bounds the dead letters of the queue, whatever
// its store (see store.Retention): when a message dies, the oldest dead
// letters beyond maxCount, and those dead for longer than maxAge, are
// deleted for good (up to store.MaxTrim at a time). Zero means no limit
// of that kind. The defaults are DefaultDeadLetterCount and
// DefaultDeadLetterAge, so that dead letters nobody requeues do not fill
// the disk. The queue decides it once, and gives the bound to its store
// with each death.
func WithDeadLetterRetention(maxCount int, maxAge time.Duration) Option {
	return func(c *config) { c.retention = store.Retention{MaxCount: maxCount, MaxAge: maxAge} }
}
