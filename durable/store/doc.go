// Package store is the contract between a durable queue (package
// durable) and the backends that keep its messages, as
// database/sql/driver is between database/sql and its drivers. Queue
// users program against package durable; this package is for those who
// write a store (durable/boltstore, durable/memstore, durable/redisstore,
// durable/pgstore, durable/mysqlstore) and for tools that work on a store
// without a queue.
//
// A store implements Store, the thirteen methods every queue needs, and
// may implement the optional interfaces Pauser, SeriesKeeper, Notifier,
// ShardedOrder and LocalClock: the queue finds them by type assertion,
// and offers what they give (Queue.Pause, Queue.Schedule, wake-ups
// across processes, a per-shard order, no clock conversion) only when
// the store has them.
//
// # Rules every store keeps
//
// Atomicity. Each method happens entirely or not at all, also when it
// returns an error. A method that takes a batch (Enqueue) writes all of
// it or none of it.
//
// Durability. When a writing method returns nil, its effect is durable in
// the store's sense (on disk for the file store, in Redis's persistence
// for Redis, committed for PostgreSQL), and every later call of any
// process on the same backend sees it.
//
// Context. A method given a ctx that is already cancelled or past its
// deadline writes nothing and returns an error wrapping ctx.Err(). A ctx
// that ends while the method runs either leaves the write whole (the
// method returns nil) or leaves nothing (it returns an error): never
// part of it.
//
// Clocks. A store measures due times and lease deadlines on a clock of
// its own (Redis's TIME, PostgreSQL's now(), the clock a file store was
// opened with). That is why methods take durations (a lease of 30s)
// rather than instants, and why results carry the store's Now: a queue
// arms its timers for NextDue-Now from its own now, and so never wakes
// early because its clock is ahead of the store's. A store on a clock of
// the queue's process says so with LocalClock.
//
// Time range. Every instant a store is given (a Message's Due, a Requeue's
// due time, a Series' times) lies in [MinTime, MaxTime], the range that
// every store of this module keeps exactly: from 1970 (Redis and
// PostgreSQL keep microseconds since 1970 in scores and cursors) to
// MaxTime in 2255 (the largest microsecond count a Lua double holds
// exactly, below the file store's nanosecond limit of 2262). The queue
// checks it once, in ValidateBatch; a store need not check it again, and
// keeps instants to the nanosecond within it (Redis and PostgreSQL to the
// microsecond, rounding a due time up, never down).
//
// Concurrency. A store is safe for concurrent use, by any number of
// queues in any number of processes if the backend is shared.
//
// Close. After Close every method returns an error wrapping ErrClosed,
// and writes nothing.
//
// Policy. A store decides nothing: how many to claim and for how long,
// whether a failed message dies, when it comes back, how many dead
// letters to keep (Retention) and which messages are valid are the
// queue's, passed as values (ClaimParams, RetryParams). A store only
// applies them, each in one place.
//
// # States
//
// A message is in exactly one of three states:
//   - pending, with a due time; ordered by due time, then by the order of
//     the Enqueue (or Retry, Requeue, lease expiry) that made it pending;
//   - in flight, with an attempt number, a fencing token and a lease
//     deadline; a message claimed before its due time is in flight but
//     not handed out until its holder confirms the lease (Confirm), and
//     until then an Enqueue or a Cancel takes it back;
//   - dead.
package store
