// Package boltstore is the embedded file store of package durable: a
// store.Store in one file on local disk, written with bbolt
// (go.etcd.io/bbolt), whose writes are fsynced before they return (by
// default) and share their fsyncs when they come together (group
// commit).
//
// durable.Open opens a queue on it in one call; Open opens a Store for
// durable.New, or for a tool that works on the file without a queue:
//
//	s, err := boltstore.Open("/var/lib/app/orders.db")
//	...
//	defer s.Close()
//	q, err := durable.New(s)
//	...
//	defer q.Close() // before s.Close: a queue does not close its store
//
// # Options
//
// WithSync sets when writes reach the disk: SyncAlways, the default,
// fsyncs every commit before the call that wrote returns; SyncNever
// leaves them to the operating system, which is much faster on disks
// with slow fsync, but a power cut may lose the last writes, or even
// damage the file (a crash of the process loses nothing). WithLockTimeout
// sets how long Open waits for a file another Store holds
// (DefaultLockTimeout, 2s). WithClock sets the clock the store measures
// due times and leases on, the machine's by default; a queue on the same
// clock uses the store's instants as they are (store.LocalClock).
//
// # Guarantees
//
// Each call is one bbolt transaction (or part of one, see below), and
// bbolt writes a transaction with copy-on-write pages: a crash leaves
// every transaction on disk whole or not at all, and with SyncAlways a
// call that returned nil survives a crash of the machine. The name of a
// file Open creates is made durable too (its directory is fsynced).
//
// A file is used by one Store at a time: bbolt locks it, and Open fails
// with ErrLocked when another Store, in this process or another, holds
// it for longer than the lock timeout. So every queue on the file is in
// one process, and the store is no store.Notifier. Open fails with
// ErrCorrupt on a file that is not a valid store; a damaged page met
// later fails the call with ErrCorrupt too, rather than a panic.
//
// The store implements store.Store, store.LocalClock, store.Pauser
// (Queue.Pause) and store.SeriesKeeper (Queue.Schedule), and passes the
// suite of package durable/storetest (on one handle: the file cannot be
// opened twice at once).
//
// # Group commit
//
// Every write goes to one goroutine, which runs the calls waiting for it
// (up to 512) in one write transaction and commits them with one fsync:
// the more callers, the more each fsync carries, and a lone caller waits
// for nothing but its own fsync, never for a delay. A call whose
// precondition fails (a lost lease, a message in flight, none found)
// writes nothing and leaves the others in the transaction; if the
// transaction itself fails (other than on a corrupt file), its calls are
// run again one transaction each, so that one failing call does not fail
// the others. A transaction
// that wrote nothing is rolled back and costs no fsync. Commits counts
// the transactions committed.
//
// A lease claimed ahead of its due time (see store.Store's Claim) is
// confirmed in memory, not in the file: every holder of a lease is in
// the process that holds the file, so Confirm adds no write and no fsync
// to a delivery. After a restart the file's in-flight messages count as
// handed out, and their leases expire as usual.
//
// # Layout
//
// The file has six buckets. Bucket msgs maps a message's ID to its
// record: its state, attempt number, fencing token, due time, when it
// was first enqueued, its Kind, MaxAttempts and Timeout, the text of its
// last error, and its payload (records of older versions of the store
// are read as they are, and rewritten by the next write to them). The
// buckets pending, inflight and dead are the orders of the three states:
// a key is an instant (the due time, the lease deadline or the time of
// death, in Unix nanoseconds) followed by a sequence number that keeps
// the order of the writes among equal instants, and its value is the
// ID. So claims, reaps and List walk an index from its start or from a
// cursor, and their cost grows with what they return, not with the size
// of the queue. Bucket meta holds the count of each state (Stats counts
// nothing) and
// the paused flag; bucket series holds the series of Queue.Schedule, by
// name. A message that dies trims the dead letters beyond the queue's
// retention in the same transaction.
package boltstore
