package durable

import (
	"time"

	"github.com/seed64e23a5c/timingwheel/durable/boltstore"
)

// The file store of Open, which lives in package durable/boltstore, and
// its options as options of Open.

// SyncPolicy says when the file of Open forces its writes to disk.
//
// Deprecated: use boltstore.SyncPolicy.
type SyncPolicy = boltstore.SyncPolicy

// The sync policies of the file (see boltstore.SyncAlways and
// boltstore.SyncNever).
const (
	// SyncAlways fsyncs every commit; the default.
	//
	// Deprecated: use boltstore.SyncAlways.
	SyncAlways = boltstore.SyncAlways
	// SyncNever leaves writes to the operating system.
	//
	// Deprecated: use boltstore.SyncNever.
	SyncNever = boltstore.SyncNever
)

// The errors of the file of Open.
var (
	// ErrLocked is returned by Open when another open queue, in this
	// process or another, holds the file.
	//
	// Deprecated: use boltstore.ErrLocked.
	ErrLocked = boltstore.ErrLocked
	// ErrCorrupt is returned when the store's file is damaged.
	//
	// Deprecated: use boltstore.ErrCorrupt.
	ErrCorrupt = boltstore.ErrCorrupt
)

// BoltStore is the file store of Open.
//
// Deprecated: use boltstore.Store.
type BoltStore = boltstore.Store

// OpenBoltStore opens the file store at path, for New. Of opts it uses
// WithClock, WithSync and WithLockTimeout.
//
// Deprecated: use boltstore.Open.
func OpenBoltStore(path string, opts ...Option) (*BoltStore, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	return boltstore.Open(path, cfg.fileOptions()...)
}

// WithSync sets the sync policy of the file of Open: SyncAlways by
// default. New ignores it.
func WithSync(p SyncPolicy) Option {
	return func(c *config) { c.sync = p }
}

// WithLockTimeout sets how long Open waits for a file that another open
// queue holds before it fails with ErrLocked: 2s by default. New ignores
// it.
func WithLockTimeout(d time.Duration) Option {
	return func(c *config) { c.lockTimeout = d }
}

// fileOptions are the options of the file of Open that c sets.
func (c *config) fileOptions() []boltstore.Option {
	opts := []boltstore.Option{boltstore.WithSync(c.sync), boltstore.WithLockTimeout(c.lockTimeout)}
	if c.clock != nil {
		opts = append(opts, boltstore.WithClock(c.clock))
	}
	return opts
}
