package boltstore

import (
	"time"

	"github.com/benbjohnson/clock"
)

// Option configures a Store (see Open).
type Option func(*config)

type config struct {
	clock       clock.Clock
	sync        SyncPolicy
	lockTimeout time.Duration
}

// DefaultLockTimeout is how long Open waits for a file that another Store
// holds, unless WithLockTimeout says otherwise.
const DefaultLockTimeout = 2 * time.Second

// SyncPolicy says when the store forces its writes to disk.
type SyncPolicy int

const (
	// SyncAlways, the default, fsyncs every commit before the call that
	// wrote returns: what Enqueue or Ack wrote survives a crash of the
	// machine. Concurrent calls share one commit and one fsync (group
	// commit).
	SyncAlways SyncPolicy = iota
	// SyncNever leaves writes to the operating system: they survive a
	// crash of the process (kill -9) but the last ones may be lost, and the
	// file may even be damaged, when the machine loses power. It is much
	// faster on disks with slow fsync.
	SyncNever
)

// WithClock sets the clock the store measures due times and leases on:
// the machine's by default. A queue on the same clock keeps the store's
// instants as they are (see store.LocalClock).
func WithClock(c clock.Clock) Option {
	return func(cfg *config) { cfg.clock = c }
}

// WithSync sets the sync policy: SyncAlways by default.
func WithSync(p SyncPolicy) Option {
	return func(c *config) { c.sync = p }
}

// WithLockTimeout sets how long Open waits for a file that another Store
// holds before it fails with ErrLocked: DefaultLockTimeout by default.
// Zero or less means the default.
func WithLockTimeout(d time.Duration) Option {
	return func(c *config) { c.lockTimeout = d }
}
