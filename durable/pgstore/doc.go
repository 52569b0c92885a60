// Package pgstore is the PostgreSQL store of package durable: a
// store.Store for a delay queue shared by many processes, whose messages
// can be written in the same transaction as the application's own rows.
// A queue on it:
//
//	pool, err := pgxpool.New(ctx, "postgres://app@db/app")
//	...
//	store, err := pgstore.New(ctx, pool, "orders")
//	...
//	q, err := durable.New(store)
//
// EnqueueTx writes messages inside the caller's pgx transaction: they
// exist, and are delivered, if and only if it commits (see the first
// example). The store needs PostgreSQL 12 or later; its tests run on 15.
//
// # Layout
//
// New creates, in the schema "public" (WithSchema for another), tables
// shared by every queue of the schema, two sequences and a table of
// schema versions:
//
//	timingwheel_messages        one row per message: (queue, id) is the primary key
//	timingwheel_series          one row per series of Queue.Schedule: (queue, name)
//	timingwheel_queues          one row per queue ever paused: its paused flag
//	timingwheel_seq             sequence: the order of writes among equal times
//	timingwheel_token           sequence: the fencing tokens
//	timingwheel_schema_version  the versions of the schema applied
//
// A row holds the message's payload (bytea), its ID (bytea, so that any
// bytes, NUL included, make an ID), its state (1 pending, 2 in flight, 3
// dead), its due time, lease deadline or time of death (timestamptz, to
// the microsecond), its seq, attempt number, fencing token, whether its
// lease was claimed ahead and not confirmed yet (held), its last error
// text, when it was first enqueued, and the message's kind (bytea, empty
// for none), max attempts (integer, 0 for the queue's) and timeout
// (bigint nanoseconds, 0 for none). Three partial indexes, one per
// state, order each state's rows of a queue by (due, seq), (deadline,
// seq) and (died_at, seq): claims, reaps, List and the lookups of the
// earliest due time and deadline are index range scans, O(log n) plus
// what they return, whatever the size of the queue or of the other queues
// in the table. A due time is rounded up to the microsecond, so that a
// message is never claimed before its Due.
//
// MigrationSQL returns the statements of the schema for teams that run
// their own migrations, and Migrate runs them (New does, unless
// WithoutMigrate). Each version of the package knows SchemaVersion: New
// migrates older tables, under a transaction-level advisory lock so that
// processes that start together migrate once, and refuses newer ones
// (ErrSchemaTooNew), which an older process could damage. Version 4
// added the columns of kind, max attempts and timeout, with constant
// defaults: ALTER TABLE adds them without rewriting the table, under a
// brief ACCESS EXCLUSIVE lock, and the rows written before read as zero.
// Version 5 compares the queue's name byte by byte (COLLATE "C"): the
// rows stay as they are, and the table's indexes are rebuilt, under an
// ACCESS EXCLUSIVE lock for as long as that takes on a large table.
//
// # Statements
//
// Every method is one SQL statement, one round trip, atomic on its own
// (but AdvanceSeries and an Enqueue too large for one statement, one
// transaction each; a Claim may come after a setting of its plan in the
// same round trip); none holds a lock between statements:
//
//   - Enqueue: one INSERT ... ON CONFLICT DO UPDATE for up to 1000
//     messages (16 MiB). A larger batch is one transaction: a statement
//     that draws the seqs of all its messages, in the call's order, then
//     statements that take them in ID order, so that two such calls lock
//     their rows in one order and never deadlock. EnqueueTx: the same,
//     in the caller's transaction.
//   - Claim: one statement for up to MaxClaim messages: it locks the
//     earliest due rows of the pending index with FOR UPDATE SKIP LOCKED
//     (concurrent claims take different rows, and never wait for each
//     other), makes them in flight with a new token each, and returns
//     them with the database's now, the next due time and deadline, and a
//     count of what is left due. On a pool that prepares its statements
//     (pgx's default mode) it is sent after a set_config of
//     plan_cache_mode, local to its transaction, so that it runs with the
//     plan PostgreSQL keeps for it, not one planned for each call (as
//     dear as running it).
//   - Retry, Extend: one UPDATE by primary key, token and state
//     each; no row matched is store.ErrLeaseLost.
//   - Ack and Confirm (only for a lease claimed ahead or held): the same,
//     a DELETE and an UPDATE (which moves the deadline too, for a
//     ConfirmParams.By), but the calls made at the same time share
//     one statement: while one statement of acks and confirmations is
//     under way, the calls that arrive wait and then go together in the
//     next, one statement (one commit) for up to 500 of both kinds, as a
//     group commit does. The statement locks its rows in ID order before
//     it writes them, as an Enqueue does, so that it cannot deadlock with
//     another that writes many rows. A lone call waits for nothing but its
//     own statement; each call gets its own outcome (ErrLeaseLost for a lease
//     that is not current).
//   - AdvanceSeries (Queue.Schedule): one transaction that locks the
//     series' row. Series, ListSeries, DeleteSeries: one statement.
//   - SetPaused (Queue.Pause, Resume): one statement on the table of the
//     queues' flags, which every claim and confirmation reads (a primary
//     key lookup); a resume notifies the queue's channel in it.
//   - Cancel, Requeue, Get: one statement by primary key. Expired, List:
//     one index range scan. Stats counts the queue's entries
//     of each state's index: O(n).
//
// A delivery thus costs the database a share of one statement to claim
// (shared by the messages of a claim), and at most one to ack, plus at
// most one to confirm if it was claimed ahead of its due time;
// under a Run with several workers, the acks and confirmations share
// statements too, one statement for those of both kinds under way.
//
// # Time
//
// The database's clock is the store's: every statement that compares a
// due time or a deadline with now reads clock_timestamp() once, in the
// statement, and Claimed.Now and ExpiredLeases.Now are that reading. A
// client whose clock is ahead cannot have a message claimed early, and
// the Queue converts the database's instants to its own clock.
//
// # Wake-ups
//
// Store implements store.Notifier. The statements that make a message
// pending (Enqueue, EnqueueTx, Retry, Requeue) call
// pg_notify on the queue's channel (timingwheel_ and a hash of the schema
// and the queue) when their message is earlier than the earliest pending
// one they can see, or when they see none: one index lookup in the same
// statement. So an idle queue, and a queue with a backlog, cost no
// notification, and the notification is sent by the commit of the
// statement's transaction, never by a rollback: a receiver never hears of
// a message it cannot yet claim.
//
// A writer decides from its snapshot. If a claim takes the message the
// writer saw as earlier before the writer commits, that claim did not see
// the writer's message either, and reports a NextDue without it; so each
// store whose Claim leases messages wakes its own subscribers one to two
// seconds later (their claim sees every commit of the second after the
// first), and a safety poll at random intervals of 2.5 to 5 seconds
// (WithSafetyPoll) covers notifications lost while a listening connection
// was down. A message can thus wait for the safety poll only if the
// transaction of its EnqueueTx commits more than a second after the
// EnqueueTx, and in that second the messages before it were claimed, or
// if the message before it was cancelled in the instant between the
// writer's statement and its commit: keep such transactions short.
//
// Each store listens on one connection of its own, opened by the first
// call of Wakeups (a store that only enqueues holds none) and closed when
// the last channel of Wakeups is given back, or by Close. It is taken
// from the pool for good (the pool opens another in its place), or opened
// with WithListenerConfig. If it fails, the store opens another, after a
// pause that grows to 5 seconds, and wakes its subscribers once it
// listens again.
//
// # PgBouncer and other poolers
//
// The statements work through PgBouncer in transaction mode (they hold
// nothing between statements; with pgx, use a QueryExecMode that does not
// rely on prepared statements if your PgBouncer is older than 1.21).
// LISTEN does not: it needs a session. Give the store a direct connection
// to PostgreSQL for listening, with WithListenerConfig, or use session
// mode for it. Without a working listener, a queue still learns of
// messages from the safety poll, up to five seconds late.
//
// # Durability and replicas
//
// A method that returns nil is as durable as its commit. With
// synchronous_commit = off, PostgreSQL acknowledges a commit before its
// WAL is on disk, and a crash of the server can lose the last commits:
// an Enqueue (a lost message) or an Ack (a message delivered again). With
// streaming replicas, a failover to an asynchronous replica can lose the
// commits it had not received; synchronous_commit = on (or
// remote_write) with synchronous_standby_names makes every commit wait for
// a synchronous replica, and remote_apply also until the replica shows
// it. Set it per role or database for the queue's user if the rest of the
// application may lose its last writes. Run the store against the
// primary: a read-only replica refuses every method but Get, List and
// Stats.
//
// # VACUUM
//
// Every state change writes a new version of the message's row (its state
// is in the partial indexes, so none of them is a HOT update), and Ack
// deletes it: a busy queue leaves dead tuples in the table and its
// indexes at the rate of its deliveries. Autovacuum reclaims them; with
// its defaults (a fifth of the table changed) it runs too seldom for a
// table whose live rows are few and whose turnover is high, and the
// pending index bloats, which slows claims. Make it run more often on
// this table, for example:
//
//	ALTER TABLE timingwheel_messages SET (
//		autovacuum_vacuum_scale_factor = 0.01,
//		autovacuum_vacuum_threshold = 1000,
//		autovacuum_vacuum_cost_delay = 0,
//		autovacuum_analyze_scale_factor = 0.02);
//
// A transaction left open for long (an idle session in a transaction, a
// long report) keeps vacuum from removing anything newer than it, in
// every table: watch for those.
//
// # Many queues, schemas
//
// The queues of a schema share its table, sequences and indexes: a queue
// is a prefix of each index, so a queue's statements read only its own
// entries, and a new queue costs nothing to create. Each queue has its
// own notification channel. Schemas (WithSchema) separate sets of queues
// entirely, with their own table and versions, for example one per
// application on a shared database.
//
// # Dead letters
//
// Dead letters are kept as the queue's retention says
// (durable.WithDeadLetterRetention, given to Retry as a store.Retention):
// the statement that makes a message die (a Retry that kills, or a reap)
// deletes the oldest beyond the count and those older than the age, up
// to 100 each time. Counting
// them reads the queue's entries of the dead index.
package pgstore
