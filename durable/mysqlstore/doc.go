// Package mysqlstore is the MySQL and MariaDB store of package durable:
// a store.Store for a delay queue shared by many processes, whose
// messages can be written in the same transaction as the application's
// own rows. A queue on it:
//
//	db, err := sql.Open("mysql", "app:secret@tcp(db:3306)/shop?parseTime=true&interpolateParams=true")
//	...
//	store, err := mysqlstore.New(ctx, db, "order-timeouts")
//	...
//	q, err := durable.New(store)
//
// db is the application's *sql.DB on github.com/go-sql-driver/mysql.
// EnqueueTx writes messages inside the caller's *sql.Tx: they exist, and
// are delivered, if and only if it commits (see the example). The store
// needs MariaDB 10.6 or later or MySQL 8.0 or later (FOR UPDATE SKIP
// LOCKED); its tests run on MariaDB 10.11, the only one tested.
// interpolateParams=true saves two round trips per statement (without it
// the driver prepares, runs and closes each); parseTime and loc do not
// matter to the store, which reads and writes instants as numbers and
// UTC text (see Time).
//
// # Layout
//
// New creates, in the database of db's connections, tables shared by
// every queue of the database, and a table of schema versions:
//
//	timingwheel_messages        one row per message: (queue, id) is the primary key
//	timingwheel_series          one row per series of Queue.Schedule: (queue, name)
//	timingwheel_queues          one row per queue ever paused: its paused flag
//	timingwheel_schema_version  the versions of the schema applied
//
// A message's row holds its payload (MEDIUMBLOB), its ID (VARBINARY, so
// that any bytes make an ID), its Kind, MaxAttempts and Timeout (kind,
// max_attempts and timeout_ns, in nanoseconds; empty and 0 for none), its
// state (1 pending, 2 in flight, 3 dead), ts, the instant its state orders
// by (its due time, lease deadline or time of death: DATETIME(6) in UTC),
// seq, which orders equal instants by the order of the writes, its attempt
// number and fencing token, whether its lease was claimed ahead and not
// confirmed yet (held), its last error text and when it was first
// enqueued. MySQL has no partial indexes: one index, (queue, state, ts,
// seq), holds each state's order, and claims, reaps, List and the lookups
// of the earliest due time and deadline are range scans of it, O(log n)
// plus what they return, whatever the other queues and states hold.
//
// There are no sequences in MySQL: a seq is the database's clock, in
// microseconds since 2000, times 4096, plus the row's place in its call,
// so that one statement's rows keep their call's order and a later write
// sorts after an earlier one. A fencing token is the claim's seq, or the
// last token plus one if that is greater: always greater than any the
// message had. Both assume the server's clock does not step back (NTP
// slews it): a step back of d can order the writes of those d among equal
// times wrongly.
//
// MigrationSQL returns the statements of the schema for teams that run
// their own migrations (then give New WithoutMigrate). New migrates older
// tables under an advisory lock (GET_LOCK), so that processes that start
// together migrate once, and refuses newer ones (ErrSchemaTooNew).
// Version 2 added kind, max_attempts and timeout_ns to the messages'
// table: one ALTER TABLE, which adds them in place without copying the
// table (ALGORITHM=INSTANT on MariaDB 10.3+ and MySQL 8.0.12+); the rows
// written before read as messages without them.
//
// # Statements
//
// Statements that lock several rows run in transactions of their own at
// READ COMMITTED, whose locking reads lock the rows they return and no
// gaps (InnoDB's REPEATABLE READ would lock the gaps of the index ranges
// that claims and trims read, and block concurrent enqueues). A write that
// the server rolls back for a deadlock (1213) or a lock wait timeout
// (1205) runs again, up to 5 times. A write, once started, is not cut by
// its ctx (a ctx that has ended before it starts writes nothing); it is
// bounded by 30 seconds.
//
//   - Enqueue: one INSERT ... ON DUPLICATE KEY UPDATE for up to 1000
//     messages and 4 MiB (the server's max_allowed_packet is 16 MiB by
//     default); a larger batch is one transaction of several, which take
//     the rows in ID order, so that two calls lock their rows in one order.
//     EnqueueTx: the same, in the caller's transaction.
//   - Claim: peekSQL, one statement that locks nothing, reads the
//     database's now, the paused flag, the earliest deadline and the first
//     pending entries of the index: on an idle queue, that is all. When
//     something is due, a transaction locks the earliest due rows with
//     FOR UPDATE SKIP LOCKED (concurrent claims take different rows, and
//     never wait for each other), checking the paused flag in the same
//     statement, and makes them in flight with one UPDATE joined on the
//     primary key: BEGIN, two statements, COMMIT.
//   - Retry, Extend, Cancel, Requeue: one UPDATE or DELETE by primary
//     key, token and state; no row changed is store.ErrLeaseLost. A death
//     with a retention is a transaction that also trims the dead letters.
//   - Ack and Confirm: a lone call is one DELETE or UPDATE by primary key;
//     the calls made while one is under way go together in the next, one
//     transaction (one commit) for up to 500 of both kinds, which locks
//     their rows in ID order and reads their tokens, then deletes and
//     confirms them with one statement each, as a group commit does. Each
//     call gets its own outcome. A Confirm's By moves the lease's deadline
//     in the statement that confirms it (in a batch, a value of its row).
//   - AdvanceSeries: one transaction that locks the series' row.
//   - Get, Expired, List, Stats, Series, ListSeries: one statement each;
//     Stats counts the queue's entries of each state, O(n).
//
// # Time
//
// The database's clock is the store's: every statement that compares a
// due time or a deadline with now reads UTC_TIMESTAMP(6), the statement's
// start, and Claimed.Now and ExpiredLeases.Now are that reading. A Claim
// computes its leases' ready times and deadlines once, from the now of
// the statement that locks their rows (that of its peek when it leases
// nothing), in Go, and writes them as they are returned. A client whose
// clock is ahead cannot have a message claimed early, and the Queue
// converts the database's instants to its own clock. Instants cross the
// driver as UTC text (a due time rounded up to the microsecond) and as
// microseconds since 1970 (TIMESTAMPDIFF), never as time.Time, so that
// the DSN's loc and parseTime and the session's time_zone change nothing.
// DATETIME, unlike TIMESTAMP, keeps the whole time range of the store
// package (to 2255).
//
// # Wake-ups
//
// MySQL has no LISTEN/NOTIFY: another process learns of a new row only
// by reading. Store implements store.Notifier with a poll: while a store
// has subscribers (a Queue calls Wakeups when it is made), it reads every
// 40ms (WithPoll) the position of its queue's earliest pending message
// and the paused flag, one prepared statement, an index lookup, and wakes
// its subscribers when the earliest pending message is another than at
// the last reading (a new earliest, or the next after one claimed), when
// the queue was resumed, at its first reading and after an error. A
// message enqueued in another process and due before anything this
// process knows of is thus claimed within 40ms of its due time plus a
// claim: 20ms at p50 and 45ms at p99 in the package's test, under the
// 100ms its tests require. The writes of another store of the same *sql.DB
// and queue in this process (Enqueue, Retry, Requeue, a resume, a series'
// step) wake the subscribers at once; EnqueueTx's, visible only at the
// commit, at the next poll.
//
// Idle cost: 25 statements a second per queue and process, the poll's,
// and nothing else (an idle Queue's Run sends none of its own: the
// package's test counts them over a second); a queue with 10 processes
// costs the server 250 index lookups a second. WithPoll(200*time.Millisecond)
// makes it 5 a second, and the bound about 200ms; WithPoll(0) turns it
// off (a queue then learns of other processes' messages only from its own
// claims and timers).
//
// # Durability and replicas
//
// A method that returns nil is as durable as its commit: with
// innodb_flush_log_at_trx_commit=1 (the default) the redo log is on disk
// at each commit, and a crash of the server loses nothing committed; with
// 0 or 2 it can lose the last second of commits, an Enqueue (a lost
// message) or an Ack (a message delivered again). With replicas,
// sync_binlog=1 and semi-synchronous replication keep a failover from
// losing commits. A connection that breaks during a write returns an
// error that says the write may or may not have been done; an Enqueue
// retried after it is harmless (the same ID replaces the message). Run
// the store against the primary.
//
// # Dead letters
//
// Dead letters are kept as the queue's retention says
// (durable.WithDeadLetterRetention, given to Retry as a store.Retention):
// the transaction that makes a message die deletes the oldest beyond the
// count and those older than the age, up to 100 each time, skipping those
// another transaction holds.
package mysqlstore
