package store

import "time"

// LeaseRef names one lease: the message's ID and the fencing token of the
// claim that made the lease. Every method that acts on a lease takes one.
type LeaseRef struct {
	ID    string
	Token uint64
}

// Lease is a message claimed by Claim.
type Lease struct {
	Message
	// Attempt is 1 on the first delivery of the message, 2 on the second.
	Attempt int
	// Token is the fencing token of this lease (see Ref).
	Token uint64
	// Deadline is when the lease expires, and Ready when the message may
	// be handed out (its due time, or the claim's now if later), both on
	// the clock of Claimed.Now.
	Deadline, Ready time.Time
	// Ahead is true if the message was claimed before its due time (see
	// Claim): its holder must Confirm the lease at Ready or later before
	// handing it out.
	Ahead bool
	// LastError is the message's LastError (see Info) when it was
	// claimed: the previous attempt's error text, "" on the first.
	LastError string
}

// Ref names the lease, for Confirm, Ack, Retry and Extend.
func (l *Lease) Ref() LeaseRef { return LeaseRef{ID: l.ID, Token: l.Token} }

// ClaimParams are the parameters of Claim, all decided by the queue.
type ClaimParams struct {
	// Limit is the most messages to lease (0 or more), and Held how many
	// of them the caller holds for later: the places beyond the first
	// Limit-Held, however many the claim finds (see Claim).
	Limit, Held int
	// Lease is how long a lease lasts after its Ready time, and Ahead how
	// far after now a message may be due and still be claimed (ahead).
	Lease, Ahead time.Duration
	// HeldLease, if positive, is the lease of the messages claimed ahead
	// beyond the first Limit-Held of the claim (held for later: see Claim)
	// instead of Lease, after their Ready time too: a caller holds them on
	// a short lease, and confirms each with the lease of a hand-out
	// (ConfirmParams.By).
	HeldLease time.Duration
}

// ConfirmParams says which lease Confirm hands out, and how long it lasts
// from then on.
type ConfirmParams struct {
	// Lease is the lease to hand out.
	Lease LeaseRef
	// By, if positive, moves the lease's deadline to By from the store's
	// now, in the same write, as Extend would; 0 keeps the deadline.
	By time.Duration
}

// Claimed is what Claim returns. Leases and Now are required. NextDue and
// NextDeadline are scheduling hints that a store must not give later than
// they are: the queue arms its timers with them, so a zero (none) or late
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
	// Paused says that the queue is paused (see Pauser): the claim leased
	// nothing, and a queue waits for a wake-up (a Resume) rather than for
	// NextDue.
	Paused bool
}

// RetryParams says how Retry ends a lease: every rule (death, back-off,
// the error text's length, the dead letters kept) is the queue's, and
// the store applies them.
type RetryParams struct {
	// Lease is the lease to end.
	Lease LeaseRef
	// After is the delay, from the store's now, after which the message
	// is due again. Zero or less: at once. Ignored if Dead.
	After time.Duration
	// Dead makes the message dead instead of pending (its last attempt
	// failed).
	Dead bool
	// Error, if not empty, becomes the message's LastError, as it is; an
	// empty one keeps the LastError the message had. A lease given back
	// unhandled (the queue closing with messages claimed ahead) is a Retry
	// with After and no Error.
	Error string
	// Unhanded says that the lease's message was not handled: claimed
	// and never handed to a consumer (claimed ahead, or waiting in a
	// caller for one), or handed out to a handler that
	// its queue stopped (not one that failed). Retry then takes back the
	// attempt its Claim counted (the attempt number goes down by one, never
	// below zero), so that an attempt counts only a hand-out that ended
	// in a failure or an expiry. With Unhanded, a queue passes no Error.
	Unhanded bool
	// Expired asks Retry to end the lease only if its deadline has passed
	// on the store's clock, and to return ErrLeaseLost otherwise: a reap
	// (see Expired) must not end a lease that was extended since it read
	// it.
	Expired bool
	// Retention, with Dead, bounds the dead letters kept (see Retention):
	// the store trims them in the write that makes the message dead.
	Retention Retention
}

// ExtendParams says how Extend moves a lease's deadline.
type ExtendParams struct {
	// Lease is the lease to extend.
	Lease LeaseRef
	// By is the new deadline's distance from the store's now.
	By time.Duration
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
	// Held is true if the lease was claimed ahead (Lease.Ahead) and never
	// confirmed (see Confirm): its message was not handed out,
	// and the queue ends it with RetryParams.Unhanded, costing no attempt
	// and leaving no error text.
	Held bool
	// MaxAttempts is the message's (see Message.MaxAttempts): the queue
	// decides with it whether an expired lease was the last attempt.
	MaxAttempts int
}

// Ref names the lease, for Retry.
func (l *ExpiredLease) Ref() LeaseRef { return LeaseRef{ID: l.ID, Token: l.Token} }

// ListParams says which page List returns.
type ListParams struct {
	// State is the state whose messages are listed.
	State State
	// Cursor is where the page starts: "" for the first page, or a cursor
	// a List of the same State returned.
	Cursor string
	// Limit is the most messages of the page (1 or more).
	Limit int
}

// RequeueParams says which dead message Requeue brings back, and when.
type RequeueParams struct {
	ID string
	// Due is the message's new due time; the zero time means the store's
	// now.
	Due time.Time
}
