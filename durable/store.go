package durable

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Store keeps the messages of a Queue. It is the contract between the
// queue, which handles waiting, leases on the consumer's side, back-off and
// options, and a backend: the embedded bbolt file of Open (BoltStore), or
// a server shared by many processes (package durable/redisstore).
//
// A store has a clock of its own, the one it measures due times and lease
// deadlines on: the queue's clock for BoltStore, Redis's TIME for Redis.
// That is why methods take durations (a lease of 30s) rather than instants,
// and why results carry the store's Now: a queue arms its timers for
// NextDue-Now from its own now, and so never wakes early because its
// clock is ahead of the store's. A store on a clock of this process says
// so by implementing LocalClock (BoltStore and memstore do): on the
// queue's own clock it needs no such conversion, and its instants are
// kept as they are.
//
// Each method is atomic: it happens entirely or not at all, also when it
// returns an error, and when it returns nil its effect is durable in the
// store's sense (on disk for BoltStore). A store is safe for concurrent
// use, by any number of queues in any number of processes if the backend
// is shared. After Close, methods return ErrClosed.
//
// A message is in exactly one of three states:
//   - pending, with a due time; ordered by due time, then by the order of
//     the Enqueue (or Retry, Requeue, lease expiry) that made it pending;
//   - in flight, with an attempt number, a fencing token and a lease
//     deadline; a message claimed before its due time is in flight but
//     not handed out until its holder confirms the lease (Confirm), and
//     until then an Enqueue or a Cancel takes it back;
//   - dead.
type Store interface {
	// Enqueue writes msgs, each valid (Message.Validate), as pending
	// messages due at their Due, or at the store's now for a zero Due. A
	// message whose ID is already held replaces it, whatever its state:
	// the old payload is never delivered again, a lease on it is lost, and
	// its attempt count starts again at zero, its LastError is cleared,
	// and its EnqueuedAt is kept (see Info). Either all of msgs are
	// written or none is. Equal due times keep the order of msgs. Two
	// messages of one ID in msgs are written as two calls would write
	// them, in order: the later wins. (Queue.Enqueue writes one message a
	// call; a Queue that takes batches may refuse such a batch before it
	// reaches the store.)
	Enqueue(ctx context.Context, msgs []Message) error

	// Cancel deletes the pending or dead message id, or the in-flight one
	// whose lease was claimed ahead and not confirmed yet (see Confirm):
	// its holder's Confirm then fails. It reports whether there was one,
	// and returns ErrInFlight, deleting nothing, if the message is in
	// flight and handed out.
	Cancel(ctx context.Context, id string) (bool, error)

	// Claim leases up to p.Limit pending messages due by now+p.Ahead,
	// earliest first: for each one, it adds one to its attempt number,
	// gives it a new fencing token, greater than any it had, and makes it
	// in flight until p.Lease after its due time or now, whichever is
	// later. A Queue claims a little ahead (see Receive) so that no write
	// stands between a due time and its delivery; it hands a message out
	// at its due time, never before.
	//
	// A message whose due time is after the store's now is claimed ahead
	// (Lease.Ahead): its lease is not handed out until Confirm says so, and
	// an Enqueue or Cancel of its ID before that takes it back. A message
	// due by now is handed out by the Claim itself, except that at most
	// p.Limit-p.Held are: p.Held (0 or more) asks for the rest to be
	// claimed as if ahead, for a caller that takes more than it hands out
	// at once (a Queue's Run, which keeps a few messages for the workers
	// that will be free soon): they too wait for Confirm, and an Enqueue
	// or Cancel before it takes them back. How many to claim, to hold and
	// for how long are the Queue's decisions (WithVisibilityTimeout, Run's
	// workers); the store applies them.
	//
	// A Claim of a paused queue (see SetPaused) leases nothing: it
	// returns no leases, with Claimed.Paused set, its Now and
	// NextDeadline as usual, and the check is part of the claim itself,
	// so that every process agrees at once.
	Claim(ctx context.Context, p ClaimParams) (Claimed, error)

	// Confirm hands out the lease token on id, claimed ahead: it returns
	// nil if token is the current lease of id and no Enqueue or Cancel
	// took the message back, and from then on Cancel answers ErrInFlight.
	// Otherwise it returns ErrLeaseLost and changes nothing: the message
	// was replaced, cancelled, released (Release, Retry) or reaped, and the holder
	// must not hand it out. Exactly one of a Confirm and a concurrent
	// Enqueue or Cancel of the same message wins. Confirm of a lease that
	// was not claimed ahead, or was confirmed already, returns nil while
	// the lease is current.
	//
	// While the queue is paused (see SetPaused), Confirm of a lease claimed
	// ahead and not confirmed yet returns ErrPaused and changes nothing:
	// the holder must not hand the message out, and gives it back with
	// Release (pending at its due time again, its attempt counted). A
	// lease handed out already, by the Claim or a Confirm before the
	// pause, goes on as usual.
	Confirm(ctx context.Context, id string, token uint64) error

	// Ack deletes the in-flight message id if token is its current lease's
	// token, and otherwise returns ErrLeaseLost and changes nothing. The
	// lease may have expired, as long as the message was not claimed again
	// nor reaped.
	Ack(ctx context.Context, id string, token uint64) error

	// Retry ends the lease token of the in-flight message id because the
	// attempt failed, as p says: the message dies if p.Dead, and is
	// otherwise pending again, due p.After from the store's now. p.Error,
	// if not empty, becomes the message's LastError, as given (the Queue
	// cuts it with TruncateErrorText first); an empty one keeps the
	// LastError it had. With p.Expired, the lease must also have expired
	// on the store's clock (its deadline at or before now). Retry returns
	// ErrLeaseLost, changing nothing, if token is not the current lease of
	// id or, with p.Expired, the lease has not expired (it was extended).
	// The store decides nothing here: whether the message dies, when it is
	// due and its error text come from the Queue (WithMaxAttempts,
	// WithBackoff).
	Retry(ctx context.Context, id string, token uint64, p RetryParams) error

	// Release gives back the lease token of the in-flight message id,
	// unhandled: the message is pending again, due after from the store's
	// now, with its attempt number and LastError as they are (the claim
	// that took it stays counted, see Info.Attempt: a store cannot take an
	// attempt back). It never dies. It returns ErrLeaseLost, changing
	// nothing, if token is not the current lease of id. A Queue releases
	// what it claimed ahead or held and did not hand out when it closes.
	Release(ctx context.Context, id string, token uint64, after time.Duration) error

	// Extend moves the deadline of the lease token on id to by from the
	// store's now, or returns ErrLeaseLost, changing nothing, if token is
	// not the current lease of id.
	Extend(ctx context.Context, id string, token uint64, by time.Duration) error

	// Expired returns up to limit (0 or more) leases whose deadline has
	// passed on the store's clock, earliest deadline first, and changes
	// nothing. The Queue ends each (see Reap) with a Retry with
	// RetryParams.Expired, so that a lease extended meanwhile is kept.
	Expired(ctx context.Context, limit int) (ExpiredLeases, error)

	// Get returns what the store holds under id, or an error wrapping
	// ErrNotFound.
	Get(ctx context.Context, id string) (Info, error)

	// List returns up to limit (1 or more) messages in state s, in order
	// (pending by due time; in flight by lease deadline; dead by time of
	// death; equal times in the order of the writes; within a shard only
	// for a ShardedOrder store), starting after
	// cursor ("" for the first page), and the cursor of the next page (""
	// at the end). A cursor is a position in the order, not a message:
	// the next page starts after it even if the message it was made from
	// has moved meanwhile, so a message that stays in s is listed exactly
	// once however the others move. A cursor List did not make for s
	// fails with an error wrapping ErrInvalidCursor.
	List(ctx context.Context, s State, cursor string, limit int) ([]Info, string, error)

	// DeadLetters returns up to limit dead messages, in the order they
	// died. Their Due is the time they died. A store may delete the
	// oldest dead letters under a retention policy (both stores of this
	// module do, see WithDeadLetterRetention), so that they do not grow
	// without bound.
	DeadLetters(ctx context.Context, limit int) ([]Message, error)

	// Requeue makes the dead message id pending again, due at due (the
	// store's now if zero), with its attempt count at zero and no
	// LastError. It returns ErrNotFound if no dead message has that ID.
	Requeue(ctx context.Context, id string, due time.Time) error

	// Stats counts the messages in each state, and says whether the
	// queue is paused.
	Stats(ctx context.Context) (Stats, error)

	// SetPaused pauses the queue (paused true) or resumes it, in one
	// atomic write kept with the messages, so that it holds for every
	// process and across restarts; setting the state it is in already
	// changes nothing. While it is paused, Claim leases nothing and
	// Confirm refuses leases claimed ahead (see both); every other method
	// goes on as usual (Enqueue, Cancel, Ack, Retry, Release, Extend,
	// Expired and the reaping over them). A resume wakes the receivers of
	// other processes as an Enqueue of a new earliest message does (a
	// Notifier's wake-up). A store starts unpaused. What to pause and
	// when is the Queue's (Queue.Pause, Queue.Resume).
	//
	// A store that cannot pause returns an error wrapping
	// ErrPauseUnsupported, and changes nothing; its Stats.Paused is
	// always false.
	SetPaused(ctx context.Context, paused bool) error

	// AdvanceSeries is the one write of a series (see Queue.Schedule): a
	// compare-and-set of its state and the message of its time, together.
	// If the series p.Name is as p expects (p.ExpectLast and
	// p.ExpectFingerprint equal to its Last and Fingerprint; both zero
	// for a series that must not exist yet), it cancels p.Cancel (if not
	// empty) as Cancel would, leaving it alone if it is in flight and
	// handed out or absent; then writes p.Message (if its ID is not
	// empty) as Enqueue would; then sets the series to p.Name,
	// p.Fingerprint, p.Last and p.Next, its Pending to p.Message.ID if
	// there is one (kept otherwise), and returns it with true. If the
	// series is not as p expects, it changes nothing and returns the
	// series as it is (the zero Series if there is none) with false. All
	// of it is one atomic write. The store checks nothing else: the times
	// and the message are the Queue's (p.Message is valid, see
	// Message.Validate).
	//
	// A store that cannot keep series as configured (Redis Cluster with
	// several shards) returns an error wrapping ErrSeriesUnsupported from
	// AdvanceSeries, Series, ListSeries and DeleteSeries, and changes
	// nothing.
	AdvanceSeries(ctx context.Context, p SeriesStep) (Series, bool, error)

	// Series returns the series name, or an error wrapping ErrNotFound.
	Series(ctx context.Context, name string) (Series, error)

	// ListSeries returns every series the store holds, by name (bytewise).
	ListSeries(ctx context.Context) ([]Series, error)

	// DeleteSeries deletes the series name and, in the same atomic write,
	// cancels its Pending message as Cancel would (a message in flight
	// and handed out, or one that is gone, is left as it is). It reports
	// whether there was such a series.
	DeleteSeries(ctx context.Context, name string) (bool, error)

	// Close releases the store. It does not delete anything.
	Close() error
}

// ShardedOrder is an optional interface of a Store that keeps its
// messages in several shards and its orders within a shard only (Redis
// WithShards). Such a store may weaken three rules of Store, and no
// other: the order of Claim, Expired and List (by time, then by write)
// holds among the messages of one shard, while messages of different
// shards come in any order; and a Claim may hand out fewer than
// Limit-Held due messages (each shard hands out its share), never more.
// Shard returns the shard that holds, or would hold, the message id;
// package durable/storetest checks the rules per shard with it. A store
// that does not implement ShardedOrder keeps the full rules.
type ShardedOrder interface {
	Shard(id string) int
}

// Notifier is implemented by a store that other processes write to, such
// as Redis. Wakeups returns a channel that receives when a message may
// have become due earlier than this process knows: another process
// enqueued a new earliest message, for example. A queue that receives
// from it asks the store again (with Claim). A notifier may also send now
// and then when nothing happened, to make up for notifications lost.
// Wakeups also returns a function that gives the channel back: the store
// forgets it and sends on it no more. A Queue calls it on Close, so that
// what it added to a shared store goes with it.
type Notifier interface {
	Wakeups() (wakeups <-chan struct{}, stop func())
}

// Lease is a message claimed by Claim.
type Lease struct {
	Message
	// Attempt is 1 on the first delivery of the message, 2 on the second.
	Attempt int
	// Token is the fencing token of this lease, for Ack, Retry, Release
	// and Extend.
	Token uint64
	// Deadline is when the lease expires, and Ready when the message may
	// be handed out (its due time, or the claim's now if later), both on
	// the clock of Claimed.Now.
	Deadline, Ready time.Time
	// Ahead is true if the message was claimed before its due time, or
	// held (see Claim): its holder must Confirm the lease at Ready or later
	// before handing it out.
	Ahead bool
	// LastError is the message's LastError (see Info) when it was
	// claimed: the previous attempt's error text, "" on the first.
	LastError string
}

// ClaimParams are the parameters of Claim, all decided by the Queue.
type ClaimParams struct {
	// Limit is the most messages to lease (0 or more), and Held how many
	// of them, at least, are not handed out by the Claim (see Claim).
	Limit, Held int
	// Lease is how long a lease lasts after its due time or the claim's
	// now, whichever is later, and Ahead how far after now a message may
	// be due and still be claimed (ahead).
	Lease, Ahead time.Duration
}

// Claimed is what Claim returns. Leases and Now are required. NextDue and
// NextDeadline are scheduling hints that a store must not give later than
// they are: the Queue arms its timers with them, so a zero (none) or late
// one while a message is pending or in flight delays that message until
// another call (an Enqueue in this process, a Notifier's wake-up, a later
// claim or reap) tells the truth; an early one only costs a claim or
// Expired call that finds nothing. DueSoon is optional (see below).
type Claimed struct {
	// Leases are the messages claimed, earliest due first.
	Leases []Lease
	// Now is the store's clock when it claimed, or a later reading.
	Now time.Time
	// NextDue is the due time of the earliest message still pending, and
	// NextDeadline the earliest deadline of a lease in flight (including
	// the ones just made), each the zero time if there is none. A store
	// that cannot tell exactly may give an earlier time (Now, at worst).
	NextDue, NextDeadline time.Time
	// DueSoon counts the messages still pending that are due by the
	// claim's horizon (its now plus ahead), or at least up to a cap of the
	// store's choosing: how many more receivers a queue wakes to claim
	// them. It is optional: zero means none, or that the store does not
	// count, and a queue then wakes one receiver if NextDue is within the
	// horizon (which claims again, and so on).
	DueSoon int
	// Paused says that the queue is paused (see SetPaused): the claim
	// leased nothing, and a queue waits for a wake-up (a Resume) rather
	// than for NextDue.
	Paused bool
}

// RetryParams says how Retry ends a lease: every rule (death, back-off,
// the error text's length) is the Queue's, and the store applies them.
type RetryParams struct {
	// After is the delay, from the store's now, after which the message
	// is due again. Zero or less: at once. Ignored if Dead.
	After time.Duration
	// Dead makes the message dead instead of pending (its last attempt
	// failed, see WithMaxAttempts).
	Dead bool
	// Error, if not empty, becomes the message's LastError, as it is.
	Error string
	// Expired asks Retry to end the lease only if its deadline has passed
	// on the store's clock, and to return ErrLeaseLost otherwise: a reap
	// (see Expired) must not end a lease that was extended since it read
	// it.
	Expired bool
}

// ExpiredLeases is what Expired returns.
type ExpiredLeases struct {
	// Leases are the leases whose deadline has passed, earliest deadline
	// first.
	Leases []ExpiredLease
	// Now, NextDue and NextDeadline are as in Claimed (NextDeadline is the
	// first lease's if there is one).
	Now, NextDue, NextDeadline time.Time
}

// ExpiredLease is one lease that Expired returns.
type ExpiredLease struct {
	ID string
	// Token is the lease's fencing token, and Attempt the message's
	// attempt number (1 or more) with this lease.
	Token   uint64
	Attempt int
	// Deadline is when the lease expired, on the store's clock.
	Deadline time.Time
}

// Reaped is what Reap returns.
type Reaped struct {
	// Returned counts the messages made pending again and Dead those that
	// died.
	Returned, Dead int
	// Now, NextDue and NextDeadline are as in Claimed, after the reap.
	Now, NextDue, NextDeadline time.Time
}

// RetryPolicy is how Reap treats a message whose lease expired.
type RetryPolicy struct {
	// MaxAttempts is the number of attempts after which a message dies.
	MaxAttempts int
	// Backoff returns the delay before the next attempt of a message whose
	// attempt number attempt (1 or more) failed.
	Backoff func(attempt int) time.Duration
}

// Delay is the back-off of a message whose attempt number attempt (1 or
// more) failed: p.Backoff(attempt), or 0 if p.Backoff is nil. A panic in
// Backoff, which is the user's code, comes back as an error, so that it
// fails the Reap that called it and not the store. Reap calls it for each
// message it makes pending again, and not for one that dies.
func (p RetryPolicy) Delay(attempt int) (d time.Duration, err error) {
	if p.Backoff == nil {
		return 0, nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("durable: the back-off function panicked for attempt %d: %v", attempt, r)
		}
	}()
	return p.Backoff(attempt), nil
}

// ErrSeriesUnsupported is wrapped by the errors of the series methods of
// a store that cannot keep series as it is configured (see Store).
var ErrSeriesUnsupported = errors.New("durable: the store cannot keep series in this configuration")

// ErrPauseUnsupported is wrapped by the error of SetPaused of a store
// that cannot pause its queue (see Store).
var ErrPauseUnsupported = errors.New("durable: the store cannot pause its queue")

// Series is what a store keeps of a series of Queue.Schedule: all a
// process needs to take part in it. The store only keeps it; what the
// fields mean is the Queue's.
type Series struct {
	// Name is the series' name, and Fingerprint that of its Schedule
	// (which the Queue compares, to find processes that disagree).
	Name, Fingerprint string
	// Last is the time of the last message of the series written, and
	// Next the time after it, when the series writes its next message.
	// A store keeps both to the nanosecond (Unix nanoseconds; a type of
	// microseconds would not do), since AdvanceSeries compares Last
	// exactly; the zero time stays the zero time.
	Last, Next time.Time
	// Pending is the ID of the last message of the series written (the
	// message of Last, or of an earlier time if a step wrote none), which
	// DeleteSeries cancels.
	Pending string
}

// SeriesStep is one step of a series, for AdvanceSeries: the state the
// caller read, the state it writes, and the messages it writes and
// cancels with it. Every value is the Queue's; the store applies them.
type SeriesStep struct {
	Name string
	// ExpectLast and ExpectFingerprint are the Last and Fingerprint of the
	// series the caller read; both zero if it found none.
	ExpectLast        time.Time
	ExpectFingerprint string
	// Fingerprint, Last and Next are the series' new state.
	Fingerprint string
	Last, Next  time.Time
	// Message is written as Enqueue would, if its ID is not empty.
	Message Message
	// Cancel, if not empty, is the ID of a message to cancel as Cancel
	// would, before Message is written.
	Cancel string
}
