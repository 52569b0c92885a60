// Package storetest is the conformance suite of the store.Store
// contract: a store passes if Run passes against it.
//
// A store's test calls Run with a Harness that makes fresh, empty stores:
//
//	func TestContract(t *testing.T) {
//		mock := clock.NewMock()
//		storetest.Run(t, storetest.Harness{
//			New:     func(t *testing.T) store.Store { return mystore.New(mock) },
//			Now:     mock.Now,
//			Advance: mock.Add,
//		})
//	}
//
// Each rule of the contract is a subtest of Run, on a store of its own,
// named after the method and the rule ("Cancel/HandedOutIsInFlight"), so
// that a failure names the rule a store breaks. The rules are those of
// the doc comments of store.Store and of the types it returns; package
// durable/memstore is the reference store that keeps them all.
//
// Time: the suite measures the store's instants (due times, deadlines,
// times of death) against the clock of the Harness. With Now and Advance
// (a mock clock the store runs on) it checks them exactly and moves time
// instead of waiting. Without, it uses the real clock (the store's clock
// must then be the machine's, as Redis's TIME is for a local server),
// waits for real, and accepts an instant between the readings taken
// before and after the call, widened by the call's own length and a
// millisecond, so that the checks hold on a loaded machine. The suite
// writes due times in whole microseconds, which every store keeps.
//
// Order: a store that keeps its orders within a shard only says so by
// implementing store.ShardedOrder, and the suite then checks the rules
// of order (Claim, Expired, the reap, List) and of hand-out (a Claim hands
// out at most Limit-Held) in their weaker form, per shard, with its Shard.
// No rule is skipped for any store.
//
// Series: the group Series checks the four methods of a
// store.SeriesKeeper (AdvanceSeries, Series, ListSeries, DeleteSeries).
// A store that is none skips it; one that cannot keep series as
// configured passes it by returning an error wrapping
// store.ErrSeriesUnsupported from each.
//
// Pause: the group Pause checks the SetPaused of a store.Pauser and what
// it does to Claim, Confirm and Stats. A store that is none skips it.
//
// What the suite cannot check through a Harness, which makes one handle
// per store: that a Notifier wakes when another handle on the same
// backend writes (it checks that the channel given back by Wakeups' stop
// receives no more), and dead-letter retention (RetryParams.Retention),
// which each store's own tests check. A store's own tests keep those.
package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// Harness makes fresh stores for the suite. Now and Advance drive the store's clock where it has one
// the suite can move (nil: the suite uses the real clock, with bounds for a loaded machine).
type Harness struct {
	New     func(t *testing.T) store.Store
	Now     func() time.Time
	Advance func(d time.Duration)
}

// Run runs every rule of the store.Store contract against stores made by h.
func Run(t *testing.T, h Harness) {
	require.NotNil(t, h.New, "Harness.New")
	require.Equal(t, h.Now == nil, h.Advance == nil, "Harness: give both Now and Advance, or neither")
	for _, g := range rules {
		t.Run(g.name, func(t *testing.T) {
			for _, r := range g.rules {
				t.Run(r.name, func(t *testing.T) {
					r.check(newEnv(t, h))
				})
			}
		})
	}
}

// A group is the rules of one method or topic.
type group struct {
	name  string
	rules []rule
}

// A rule is one subtest: check runs it on a fresh store.
type rule struct {
	name  string
	check func(e *env)
}

// rules is every rule Run checks, in the order it runs them.
var rules = []group{
	{"Enqueue", enqueueRules},
	{"Cancel", cancelRules},
	{"Claim", claimRules},
	{"Confirm", confirmRules},
	{"Lease", leaseRules},
	{"Retry", retryRules},
	{"Release", releaseRules},
	{"Extend", extendRules},
	{"Expired", expiredRules},
	{"Reap", reapRules},
	{"DeadLetters", deadLetterRules},
	{"Requeue", requeueRules},
	{"Get", getRules},
	{"List", listRules},
	{"Stats", statsRules},
	{"Close", closeRules},
	{"Series", seriesRules},
	{"Pause", pauseRules},
	{"Notifier", notifierRules},
}

// env is what a rule works with: a fresh store, its test, and the clock.
type env struct {
	t   *testing.T
	s   store.Store
	ctx context.Context
	// mock is true if the harness moves the store's clock: instants are
	// then exact, and time passes only by Advance.
	mock    bool
	nowFn   func() time.Time
	advance func(time.Duration)
	// span is the longest of the store's calls timed so far (by around,
	// claim and reap), on the real clock: a store of several nodes moves
	// its instants between the clocks of its nodes, read at different
	// times within one call.
	span time.Duration
}

func newEnv(t *testing.T, h Harness) *env {
	e := &env{t: t, ctx: context.Background(), mock: h.Now != nil, nowFn: h.Now, advance: h.Advance}
	if !e.mock {
		e.nowFn, e.advance = time.Now, time.Sleep
	}
	e.s = h.New(t)
	require.NotNil(t, e.s, "Harness.New returned nil")
	return e
}

// now is the clock's reading, in whole microseconds.
func (e *env) now() time.Time { return e.nowFn().Truncate(time.Microsecond) }

// short is a delay a rule waits out: a minute on a mock clock, which
// moves at once, and a fifth of a second on the real clock.
func (e *env) short() time.Duration {
	if e.mock {
		return time.Minute
	}
	return 200 * time.Millisecond
}

// around calls f and returns the clock's readings before and after it:
// the store's now during f is between them (equal on a mock clock).
func (e *env) around(f func()) (before, after time.Time) {
	before = e.nowFn()
	f()
	after = e.nowFn()
	e.span = max(e.span, after.Sub(before))
	if !e.mock {
		// A store may keep microseconds only.
		before = before.Truncate(time.Microsecond)
	}
	return before, after
}

// requireBetween checks that got is between lo and hi: exactly on a mock
// clock; on the real clock, give or take the distance between them, the
// longest call (see env.span) and a millisecond.
func (e *env) requireBetween(got, lo, hi time.Time, what string) {
	e.t.Helper()
	slack := time.Duration(0)
	if !e.mock {
		slack = hi.Sub(lo) + e.span + time.Millisecond
	}
	require.False(e.t, got.Before(lo.Add(-slack)) || got.After(hi.Add(slack)),
		"%s: %v is not between %v and %v (slack %v)", what, got, lo, hi, slack)
}

// requireInstant checks that got is want, an instant the store reported
// (exactly on a mock clock; see requireBetween for the real one).
func (e *env) requireInstant(want, got time.Time, what string) {
	e.t.Helper()
	e.requireBetween(got, want, want, what)
}

// waitPast lets the store's clock pass at: it moves a mock clock just past
// it, or waits for the real clock to pass it by the longest call (see
// env.span) and a millisecond. A store of several nodes moves the instants
// of one call to the clock of one node as if its nodes had answered at
// once; they answer within the call, so an instant it gives may be up to
// the call's length before the one its node keeps (a lease's deadline on
// a cluster: 3-5 ms seen under load, where Expired then found nothing).
func (e *env) waitPast(at time.Time) {
	if e.mock {
		if d := at.Sub(e.nowFn()); d >= 0 {
			e.advance(d + time.Microsecond)
		}
		return
	}
	for {
		d := time.Until(at) + e.span + time.Millisecond
		if d <= 0 {
			return
		}
		time.Sleep(d)
	}
}

// The calls to Claim, Retry and the reap are made here and nowhere else.

// claimArgs are the parameters of a Claim.
type claimArgs = store.ClaimParams

// tryClaim calls Claim.
func (e *env) tryClaim(a claimArgs) (store.Claimed, error) {
	return e.s.Claim(e.ctx, a)
}

// tryRetry calls Retry.
func (e *env) tryRetry(l store.Lease, p store.RetryParams) error {
	p.Lease = l.Ref()
	return e.s.Retry(e.ctx, p)
}

// tryReap reaps as a Queue does (durable.Reap: Expired, then a fenced
// Retry for each lease).
func (e *env) tryReap(limit int, p durable.RetryPolicy) (durable.Reaped, error) {
	return durable.Reap(e.ctx, e.s, limit, p)
}
