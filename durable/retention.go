package durable

import (
	"fmt"
	"time"
)

// Default dead-letter retention (see WithDeadLetterRetention and
// DefaultRetention).
const (
	DefaultDeadLetterCount = 10_000
	DefaultDeadLetterAge   = 7 * 24 * time.Hour
)

// Retention bounds the dead letters a store keeps: when a message dies, the
// store deletes the oldest beyond MaxCount and those that died more than
// MaxAge ago (a bounded number a call, so that a call stays short). Zero
// means no limit of that kind. It is decided here, once, and given to a
// store as a value: the file store takes it from WithDeadLetterRetention,
// redisstore from its option of the same name.
type Retention struct {
	MaxCount int
	MaxAge   time.Duration
}

// DefaultRetention is the retention of a store given none:
// DefaultDeadLetterCount messages, DefaultDeadLetterAge of age.
var DefaultRetention = Retention{MaxCount: DefaultDeadLetterCount, MaxAge: DefaultDeadLetterAge}

// Validate returns an error if a limit of r is negative.
func (r Retention) Validate() error {
	if r.MaxCount < 0 || r.MaxAge < 0 {
		return fmt.Errorf("durable: WithDeadLetterRetention(%d, %v): negative limit", r.MaxCount, r.MaxAge)
	}
	return nil
}
