package store

import (
	"fmt"
	"time"
)

// Retention bounds the dead letters a store keeps. The queue decides it
// (durable.WithDeadLetterRetention) and gives it to the store with each
// Retry that makes a message dead (RetryParams.Retention); the store then
// deletes, in the same atomic write, the oldest dead letters beyond
// MaxCount and those that died more than MaxAge before its now, at most
// MaxTrim of them, oldest first. Zero means no limit of that kind.
type Retention struct {
	MaxCount int
	MaxAge   time.Duration
}

// The retention of a queue given no durable.WithDeadLetterRetention, here
// so that the stores' deprecated names of it are this one.
const (
	DefaultDeadLetterCount = 10_000
	DefaultDeadLetterAge   = 7 * 24 * time.Hour
)

// MaxTrim is the most dead letters one Retry deletes under a Retention,
// so that a write stays short; every death trims, which keeps up.
const MaxTrim = 100

// Validate returns an error if a limit of r is negative.
func (r Retention) Validate() error {
	if r.MaxCount < 0 || r.MaxAge < 0 {
		return fmt.Errorf("durable: WithDeadLetterRetention(%d, %v): negative limit", r.MaxCount, r.MaxAge)
	}
	return nil
}
