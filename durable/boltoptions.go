package durable

import (
	"time"
)

// The options of the file store of Open and OpenBoltStore; New ignores
// them.

// SyncPolicy says when the embedded store forces its writes to disk.
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

// WithDeadLetterRetention bounds the dead letters of the file of Open
// (and OpenBoltStore) (see Retention): when a message dies, the oldest
// dead letters beyond maxCount, and those dead for longer than maxAge,
// are deleted for good (up to 100 at a time). Zero means no limit
// of that kind. The defaults are DefaultDeadLetterCount and
// DefaultDeadLetterAge, so that dead letters nobody requeues do not fill
// the disk. New ignores it (see the store's own option, such as
// redisstore.WithDeadLetterRetention).
func WithDeadLetterRetention(maxCount int, maxAge time.Duration) Option {
	return func(c *config) { c.retention = Retention{MaxCount: maxCount, MaxAge: maxAge} }
}
