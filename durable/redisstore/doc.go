// Package redisstore is the Redis store of package durable: a
// store.Store for a delay queue shared by many processes on many
// machines. A queue on it:
//
//	client := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"localhost:6379"}})
//	store, err := redisstore.New(client, "orders")
//	...
//	q, err := durable.New(store)
//
// It works on a single Redis, with Sentinel and on Redis Cluster, and
// needs Redis 5 or later; on Redis 7 it uses sharded pub/sub. Its tests
// run on Redis 7.0.
//
// # Layout
//
// All the keys of a queue share one hash tag, so they live in one slot of
// a cluster, and every script is given all the keys it touches in KEYS:
//
//	tw:{orders}:pending   sorted set of pending messages, by due time
//	tw:{orders}:inflight  sorted set of leased messages, by lease deadline
//	tw:{orders}:dead      sorted set of dead messages, by time of death
//	tw:{orders}:meta      hash: ID -> state, order, attempt, fencing token, enqueue nonce;
//	                      and the field "" -> "1" while the queue is paused (Queue.Pause)
//	tw:{orders}:payload   hash: ID -> payload
//	tw:{orders}:error     hash: ID -> the text of its last failed attempt's error
//	tw:{orders}:enqueued  hash: ID -> when it was first enqueued (µs)
//	tw:{orders}:fields    hash: ID -> its Kind, MaxAttempts and Timeout, if it
//	                      has any, behind the nonce of the Enqueue that wrote it
//	tw:{orders}:seq       counter of the order messages became pending or died
//	tw:{orders}:token     counter of fencing tokens
//	tw:{orders}:wake      pub/sub channel of wake-ups
//	tw:{orders}:shards    the queue's shard count
//
// With WithShards(n), the queue is n such sets of keys but the last, with
// a '#' after the tag instead of a ':' (tw:{orders:0}#pending to
// tw:{orders:n-1}#wake), and a message lives in the one its ID hashes to;
// tw:{orders}:shards holds the count. So no two queues share a key,
// whatever their names: queue "orders:0" has the keys tw:{orders:0}:pending
// and so on, which shard 0 of queue "orders" does not (the two only share
// a slot).
//
// # Order and time
//
// Scores are microseconds since 1970, on Redis's clock: a due time is
// rounded up to the microsecond, so a message is never claimed before its
// Due. Every time a script needs "now" it asks Redis (TIME), never the
// client, so a client whose clock is ahead cannot have a message claimed
// early, and Claimed.Now and ExpiredLeases.Now are Redis's clock.
//
// On a cluster each node has its own clock. A call that several nodes
// answer moves their instants to the clock of one of them by their
// distance from each node's own now, as if the nodes had answered at
// once; they answer within the call, so an instant it gives (a lease's
// Deadline, a hint) may be off by up to the call's length either way. A
// lease may thus be reaped up to that much before or after the Deadline
// its holder was given; the fencing token still decides.
//
// Members of the pending and dead sets are the ID behind a prefix of 20
// bytes: 4 digits of the due time's nanoseconds within the microsecond of
// the score, then 16 hex digits of a per-shard sequence number, taken
// from the seq counter whenever a message becomes pending (Enqueue, Retry,
// Requeue) or dies. Redis orders members of equal score bytewise,
// so messages come out by due time to the nanosecond, then, for equal due
// times, in the order they became pending, exactly; and a message is
// delivered with its exact Due.
//
// # Inspecting
//
// Get is one script on the ID's shard. List reads a state's sorted set
// from a cursor, the score and member of the last message listed, in
// scripts of at most 1000 messages and about 4 MiB of payloads, each
// O(log N) plus what it returns, so that paging through millions of
// messages never holds Redis long: the cursor's rank if its member is
// still there at its score, otherwise a binary search by rank among the
// members of that score. With shards, each page reads up to its limit
// from every shard and merges them by score, then member, one order over
// all the shards; so a page costs up to limit messages read on each shard.
// Messages of equal times keep the order of their writes within a shard,
// not across shards. Scores are on the clock of each shard's node.
//
// The error text of Retry is kept in the error hash until the message is
// acked, cancelled, replaced by an Enqueue, requeued or trimmed from the
// dead letters; a reaped lease writes "lease expired" (durable.LeaseExpired).
// A message written by an earlier version has no EnqueuedAt until an
// Enqueue replaces it. Processes of the earlier version keep working on a
// queue that processes of this one share, during a rolling upgrade: meta
// keeps its layout, and the two new hashes are apart; but what the
// earlier version does writes no error text nor enqueued time, and its
// Ack, Cancel, Enqueue and trims leave the entries of the new hashes
// behind: one small string per message, and a message that such a
// process replaced may show the former one's LastError and EnqueuedAt.
// Processes of versions before pausing (durable.Queue.Pause) do not see a
// pause: they go on claiming while it lasts.
//
// A message's Kind, MaxAttempts and Timeout are in the fields hash, and
// only for a message that has one of them, so that a message without
// them costs nothing more. A message written before the hash existed
// reads as having none (the zero values). Processes of the version before
// it keep working too, on the same terms: they deliver a message with
// its payload but without its fields (no Kind to route it by), a message
// they enqueue has none, and their Ack, Cancel and trims leave the
// message's entry behind. Each entry starts with the nonce of the Enqueue
// call that wrote the message, which its meta keeps whatever happens to
// it, and counts only under that nonce: a message that such a process
// replaced has its own nonce, and reads as having none, never the former
// one's. (Versions from before the nonce write meta without it: a message
// they claim or retry loses its fields.)
//
// # Scripts and fencing
//
// Enqueue, Claim (which promotes due messages and leases them at once),
// Confirm, Ack, Retry, Extend, Cancel, Requeue and Expired are
// each one Lua script, run with EVALSHA (EVAL when Redis does not have it
// cached), so each is atomic. With shards, a call runs its script on the
// shards it needs; and a Claim with a HeldLease that found some shards
// short of their share of the leases not held, while others held some,
// makes one more script call on the latter, which gives those held leases
// the Claim's Lease (see Store.Claim).
//
// Enqueue, Ack and Confirm calls that goroutines of a process make at the
// same time share script calls: the calls that arrive while one such
// script is under way go together in the next (the acks and confirmations
// of each shard together, in one script, and apart from the enqueues, so
// that a delivery's confirmation never waits for the producers' script
// under way to be answered). A lone
// call waits for nothing but its own script; each call still gets its own
// outcome, and calls that write one ID go in different scripts.
// The scripts of many messages write them with one command per hash and
// sorted set, not one per message.
//
// Claim and Expired handle at most MaxClaim and MaxReap messages
// per call, so a backlog of millions coming due at once never blocks Redis
// for more than a few milliseconds; and a Claim, like each script of
// List, reads about 4 MiB of payloads at most (one message if it is
// larger), so that large payloads do not hold Redis either. Each claim
// takes a fencing token from the shard's token counter, which only grows:
// a message's tokens only grow too, whatever happens to it (an Enqueue
// that replaces it, a Cancel and Enqueue of the same ID), and Ack, Retry
// and Extend with another token than the current lease's return
// store.ErrLeaseLost and change nothing.
//
// # Claimed ahead
//
// A message claimed before its due time (a Queue claims up to 50ms ahead)
// is in flight in state "claimed ahead" until its holder confirms it at
// the due time with one script call (Confirm), which makes it handed out
// only if its token is still current. An Enqueue of the same ID replaces
// it and a Cancel deletes it (returning true) as long as it is not
// confirmed, in whatever process it is held; the holder's Confirm then
// fails, and it does not hand the message out. The two scripts run one
// after the other on the shard's node, so exactly one wins. A message
// claimed when already due is handed out by the Claim itself. Confirm is
// one round trip at the due time, which the lateness of a delivery
// includes (a fraction of a millisecond on a local network). A Confirm
// with a By (store.ConfirmParams) moves the lease's deadline in that same
// script, so that a message held on a short lease gets the lease of its
// hand-out with no second round trip.
//
// # Dead letters
//
// Dead letters are kept as the queue's retention says
// (durable.WithDeadLetterRetention, given to Retry as a store.Retention):
// the script that makes a message die (a Retry that kills) deletes the
// oldest beyond the count and those older than the age, up to
// store.MaxTrim a call. With shards, each shard keeps up to count/n
// (rounded up).
//
// # Wake-ups
//
// Store implements store.Notifier. The scripts that make a message
// pending publish on the shard's wake channel when that message is now
// earlier than every other pending one, and Wakeups receives from it: a
// process that armed its timer for a later message wakes. Nothing is
// published when the new message is not the earliest, so an idle queue
// costs nothing. A safety poll at random intervals of 2.5 to 5 seconds
// (WithSafetyPoll) covers notifications lost while a connection was down.
//
// On Redis 7 and later the scripts publish with SPUBLISH, so that on a
// cluster the message stays on the node that owns the slot, and PUBLISH
// before. The server decides, not the client: the scripts test Redis's
// version themselves (redis.REDIS_VERSION_NUM), and a store asks the
// server the same question, with a tiny script, each time it subscribes,
// so that publishers and subscribers agree whatever their Redis users
// may run. When Redis Cluster moves the slot of a wake channel to another
// node, it unsubscribes the store, which subscribes again, on the new
// node, and wakes.
//
// A store opens its pub/sub connections on the first call of Wakeups:
// one on a single Redis or with Sentinel, whatever the shard count, and
// on a cluster one per master that owns the slot of one of the queue's
// shard channels (at most the number of masters), each subscribed to the
// channels of its master. They stay until Close. Each queue over the
// store has one channel of Wakeups, which its Close gives back. A wake-up
// wakes one waiting receiver of a queue, which wakes the next if its
// claim finds more due.
//
// # Back-off
//
// The store has no back-off of its own: a Queue reaps (durable.Reap) by
// reading the expired leases (Expired, a read-only script), computing
// each one's back-off or death itself, and ending each lease with a
// Retry that holds only if the lease is still the same and still expired.
// A reap of k leases is thus one script per shard and k short ones.
//
// # Safety
//
// New refuses a Redis whose maxmemory-policy is not noeviction
// (ErrUnsafeEviction): it would delete keys, and messages with them, when
// it runs out of memory. A Redis that hides its configuration (CONFIG
// disabled) is accepted, with a warning to the logger. Durability is that
// of the Redis configuration: use AOF with appendfsync always for a
// message whose Enqueue returned nil to survive a crash of Redis.
//
// Replication is asynchronous: with replicas (Sentinel, Cluster), a write
// the primary acknowledged and had not sent to a replica when it died is
// lost on failover: an Enqueue (a lost message), or an Ack (the message
// is delivered again). WithReplicas(n, timeout) makes every write wait
// until n replicas have it (WAIT), and return ErrNotReplicated if they do
// not confirm in time; then a failover to one of those replicas keeps
// every write that returned nil.
//
// go-redis sends a command again when its reply is lost: the connection
// failed, or the reply took longer than ReadTimeout (3s by default), which
// a Redis busy with something else, a slow disk under appendfsync always,
// can cause (MaxRetries, 3 by default, sets how many times). The first
// send ran, or will, so the second finds its work done:
//
//   - Enqueue is idempotent: each call has a random nonce, kept with the
//     messages it writes, and the same call run again leaves those
//     messages alone, even one claimed meanwhile, whose lease holds. Only a
//     message acked or cancelled in between is written again, and
//     delivered twice, which at-least-once delivery allows.
//   - A Claim whose reply was lost leaves its leases to expire, and the
//     messages come back after the visibility timeout.
//   - An Ack, Retry, Cancel or Requeue whose reply was lost reports on the
//     second run what it finds: store.ErrLeaseLost for an Ack or Retry,
//     false for a Cancel, store.ErrNotFound for a Requeue, although the
//     first run did the work. Extend sets the deadline again.
//
// The default MaxRetries suits a queue: nothing is lost, at worst a
// message comes back later or twice. Set MaxRetries to -1 to get the
// first error instead. Keep ReadTimeout well above the few milliseconds a
// script takes, so that a reply is lost only when something is wrong.
package redisstore
