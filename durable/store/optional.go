package store

import (
	"context"

	"github.com/benbjohnson/clock"
)

// The optional interfaces of a Store. The queue finds each by type
// assertion, as database/sql finds the optional interfaces of a driver,
// and offers what it gives only when the store has it.

// Pauser is a store that can pause its queue (Queue.Pause).
type Pauser interface {
	// SetPaused pauses the queue (paused true) or resumes it, in one
	// atomic write kept with the messages, so that it holds for every
	// process and across restarts; setting the state it is in already
	// changes nothing. While it is paused, Claim leases nothing and
	// Confirm refuses leases claimed ahead (see both); every other method
	// goes on as usual. A resume wakes the receivers of other processes
	// as an Enqueue of a new earliest message does (a Notifier's
	// wake-up). A store starts unpaused.
	SetPaused(ctx context.Context, paused bool) error
}

// SeriesKeeper is a store that keeps the series of the queue's Schedule.
type SeriesKeeper interface {
	// AdvanceSeries is the one write of a series: a compare-and-set of
	// its state and the message of its time, together. If the series
	// p.Name is as p expects (p.ExpectLast and p.ExpectFingerprint equal
	// to its Last and Fingerprint; both zero for a series that must not
	// exist yet), it cancels p.Cancel (if not empty) as Cancel would,
	// leaving it alone if it is in flight and handed out or absent; then
	// writes p.Message (if its ID is not empty) as Enqueue would; then
	// sets the series to p.Name, p.Fingerprint, p.Last and p.Next, its
	// Pending to p.Message.ID if there is one (kept otherwise), and
	// returns it with true. If the series is not as p expects, it changes
	// nothing and returns the series as it is (the zero Series if there
	// is none) with false. All of it is one atomic write.
	//
	// A store that cannot keep series as configured returns an error
	// wrapping ErrSeriesUnsupported from every method of SeriesKeeper,
	// and changes nothing.
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
}

// Notifier is a store that other processes write to, such as Redis.
// Wakeups returns a channel that receives when a message may have become
// due earlier than this process knows: another process enqueued a new
// earliest message, for example. A queue that receives from it asks the
// store again (with Claim). A notifier may also send now and then when
// nothing happened, to make up for notifications lost. Wakeups also
// returns a function that gives the channel back: the store forgets it
// and sends on it no more. A queue calls it on Close.
type Notifier interface {
	Wakeups() (wakeups <-chan struct{}, stop func())
}

// ShardedOrder is a store that keeps its messages in several shards and
// its orders within a shard only (Redis WithShards). Such a store may
// weaken three rules of Store, and no other: the order of Claim, Expired
// and List (by time, then by write) holds among the messages of one
// shard, while messages of different shards come in any order; a Claim
// holds on HeldLease only the messages claimed ahead beyond each
// shard's share of its first Limit-Held, so one beyond the first
// Limit-Held may have Lease (when due messages of other shards took
// places of their shares), and one within it may keep HeldLease, coming
// after the other leases of the claim, when the write that would have
// given it Lease failed on its shard; and a Retention holds per shard, a death
// trimming the dead letters of its own shard, each shard keeping its
// share of MaxCount (at least one). Shard returns the shard that holds,
// or would hold, the message id.
type ShardedOrder interface {
	Shard(id string) int
}

// LocalClock is a store that measures time on a clock of this process,
// which Clock returns (the file store and memstore do; Redis, on the
// server's TIME, does not). A queue whose clock is the same one keeps the
// store's instants as they are; with any other store it converts them by
// the two clocks' nows (see the package doc).
type LocalClock interface {
	Clock() clock.Clock
}
