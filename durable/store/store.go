package store

import "context"

// Store keeps the messages of a queue: the thirteen methods every backend
// implements. The rules the package doc states (atomicity, durability,
// context, clocks, time range, Close) hold for each method; what a store
// may offer beyond them it offers through the optional interfaces
// (Pauser, SeriesKeeper, Notifier, ShardedOrder, LocalClock).
type Store interface {
	// Enqueue writes msgs, which the caller has validated
	// (ValidateBatch), as pending messages due at their Due, or at the
	// store's now for a zero Due. A message whose ID is already held
	// replaces it, whatever its state: the old payload is never delivered
	// again, a lease on it is lost, and its attempt count starts again at
	// zero, its LastError is cleared, and its EnqueuedAt is kept (see
	// Info). Either all of msgs are written or none is. Equal due times
	// keep the order of msgs.
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
	// in flight. The lease's Ready is the later of the message's due time
	// and the store's now, and its Deadline is Ready+p.Lease: a store
	// computes both in one place, and returns them as it keeps them.
	//
	// A message whose due time is after the store's now is claimed ahead
	// (Lease.Ahead): its lease is not handed out until Confirm says so, and
	// an Enqueue or Cancel of its ID before that takes it back. A message
	// due by now is handed out by the Claim itself, whatever its place in
	// the claim. p.Held (0 or more) says how many places of the claim, those
	// beyond its first p.Limit-p.Held, a caller holds for later: the
	// messages claimed ahead in them (held) have a lease of p.HeldLease, if
	// positive, instead of p.Lease. A claim that finds fewer than p.Limit
	// fills the first places first: with p.Limit-p.Held or fewer, none is
	// held.
	//
	// A Claim of a paused queue (see Pauser) leases nothing: it returns
	// no leases, with Claimed.Paused set, its Now and NextDeadline as
	// usual, and the check is part of the claim itself, so that every
	// process agrees at once.
	Claim(ctx context.Context, p ClaimParams) (Claimed, error)

	// Confirm hands out the lease p.Lease, claimed ahead: it returns nil
	// if it is the current lease of its message and no Enqueue or Cancel
	// took the message back, and from then on Cancel answers ErrInFlight;
	// with p.By, the lease's deadline is then p.By from the store's now.
	// Otherwise it returns ErrLeaseLost and changes nothing: the message
	// was replaced, cancelled, given back (Retry) or reaped, and the
	// holder must not hand it out. Exactly one of a Confirm and a
	// concurrent Enqueue or Cancel of the same message wins. Confirm of a
	// lease that was not claimed ahead, or was confirmed already, returns
	// nil while the lease is current.
	//
	// While the queue is paused (see Pauser), Confirm of a lease claimed
	// ahead and not confirmed yet returns ErrPaused and changes nothing:
	// the holder must not hand the message out, and gives it back with
	// Retry (After only). A lease handed out already goes on as usual.
	Confirm(ctx context.Context, p ConfirmParams) error

	// Ack deletes the in-flight message of l if l is its current lease,
	// and otherwise returns ErrLeaseLost and changes nothing. The lease
	// may have expired, as long as the message was not claimed again nor
	// reaped.
	Ack(ctx context.Context, l LeaseRef) error

	// Retry ends the lease p.Lease, as p says: the message dies if p.Dead
	// (and the dead letters beyond p.Retention are deleted in the same
	// write), and is otherwise pending again, due p.After from the store's
	// now. p.Error, if not empty, becomes the message's LastError; an
	// empty one keeps the LastError it had. The attempt number stays as
	// it is, unless p.Unhanded: then it goes down by one (not below zero),
	// taking back the attempt Claim counted for a message that was not
	// handled. With p.Expired, the
	// lease must also have expired on the store's clock (its deadline at
	// or before now). Retry returns ErrLeaseLost, changing nothing, if
	// p.Lease is not the current lease of its message or, with p.Expired,
	// the lease has not expired (it was extended).
	Retry(ctx context.Context, p RetryParams) error

	// Extend moves the deadline of the lease p.Lease to p.By from the
	// store's now, or returns ErrLeaseLost, changing nothing, if p.Lease
	// is not the current lease of its message.
	Extend(ctx context.Context, p ExtendParams) error

	// Expired returns up to limit (0 or more) leases whose deadline has
	// passed on the store's clock, earliest deadline first, and changes
	// nothing. Each says whether it was claimed ahead and never confirmed
	// (ExpiredLease.Held). A lease is expired when its deadline is at or before the
	// store's now, never before. The queue ends each with a Retry with
	// RetryParams.Expired, so that a lease extended meanwhile is kept.
	Expired(ctx context.Context, limit int) (ExpiredLeases, error)

	// Get returns what the store holds under id, or an error wrapping
	// ErrNotFound.
	Get(ctx context.Context, id string) (Info, error)

	// List returns up to p.Limit (1 or more) messages in state p.State,
	// in order (pending by due time; in flight by lease deadline; dead by
	// time of death, oldest first; equal times in the order of the
	// writes; within a shard only for a ShardedOrder store), starting
	// after p.Cursor ("" for the first page), and the cursor of the next
	// page ("" at the end), made with Cursor.String. A message that stays
	// in the state is listed exactly once however the others move. A
	// cursor List did not make for the state fails with an error wrapping
	// ErrInvalidCursor.
	List(ctx context.Context, p ListParams) ([]Info, string, error)

	// Requeue makes the dead message p.ID pending again, due at p.Due
	// (the store's now if zero), with its attempt count at zero and no
	// LastError. It returns ErrNotFound if no dead message has that ID.
	Requeue(ctx context.Context, p RequeueParams) error

	// Stats counts the messages in each state, and says whether the
	// queue is paused.
	Stats(ctx context.Context) (Stats, error)

	// Close releases the store. It does not delete anything.
	Close() error
}
