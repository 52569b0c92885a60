// Package storetest is the conformance suite of the store.Store
// contract: a store passes if Run passes against it.
//
// A store's test calls Run with a Harness that opens stores: New a fresh,
// empty backend; Reopen the same backend again after closing a handle (a
// restart); Second another handle on the same backend (a second
// process):
//
//	func TestContract(t *testing.T) {
//		mock := clock.NewMock()
//		storetest.Run(t, storetest.Harness{
//			New:     func(t *testing.T) store.Store { return mystore.New(mock) },
//			Reopen:  func(t *testing.T, s store.Store) store.Store { ... },
//			Second:  func(t *testing.T, s store.Store) store.Store { ... },
//			Now:     mock.Now,
//			Advance: mock.Add,
//		})
//	}
//
// Each rule of the contract is a subtest of Run, on a backend of its own,
// named after the method or topic and the rule
// ("Cancel/HandedOutIsInFlight"), so that a failure names the rule a
// store breaks. The rules are those of the doc comments of package store
// (its package doc, store.Store and the optional interfaces); package
// durable/memstore is the reference store that keeps them all. Among
// them, held messages cost nothing (Retry/UnhandedTakesBackTheAttempt,
// Expired/ReportsHeld): Expired reports Held for a lease claimed ahead or
// held and never confirmed, not for one handed out or confirmed; a Retry
// with Unhanded takes back the attempt its claim counted (never below
// zero) and keeps LastError, so that a held lease given back is as it was
// before its claim, while a Retry without it (a failure) keeps the
// attempt counted. Besides each method's rules, the suite checks:
//
//   - Restart (Harness.Reopen): every state, the order of equal due times,
//     fencing tokens, a lease in flight (it still acks, extends and
//     expires), a lease claimed ahead, the pause and the series are there
//     after a restart.
//   - Handles (Harness.Second): each handle sees the other's writes, its
//     Confirm and Cancel (exactly one of a Confirm and the other's Cancel
//     wins), its pause, its series steps (exactly one of racing steps
//     wins); claimers on both never share a lease; a Notifier wakes on the
//     other's new earliest message and resume; closing one leaves the
//     other.
//   - Races: claimers with a claim horizon and a short lease, against a
//     reaper, never hold one message twice at once (by token, each claim's
//     Now is at or after the deadline of the lease before); an Ack, and an
//     Extend, racing a reap's Retry of the expired lease: exactly one wins;
//     concurrent AdvanceSeries from one state: exactly one wins.
//   - Context: every write method given a cancelled ctx, or one past its
//     deadline, returns an error wrapping ctx.Err() and changes nothing.
//   - Close: every method, those of Pauser and SeriesKeeper too, returns
//     ErrClosed after Close (a SeriesKeeper that cannot keep series may
//     say ErrSeriesUnsupported instead), and writes nothing.
//   - Time: due times below the microsecond are kept, or rounded up to it,
//     never down; store.MinTime and store.MaxTime are kept exactly; series
//     times to the nanosecond.
//   - Batches: a batch larger than any store writes in one command is
//     written whole, or not at all if one message is invalid.
//   - Retention: MaxCount, MaxAge, and at most store.MaxTrim deleted by
//     one death, never the message dying.
//   - Fields: a message's Kind, MaxAttempts and Timeout are kept as
//     enqueued in every state (held and ahead too), through retries,
//     death, Requeue and a restart; an Enqueue of the same ID replaces
//     them.
//
// Time: the suite measures the store's instants (due times, deadlines,
// times of death) against the clock of the Harness. With Now and Advance
// (a mock clock the store runs on) it checks them exactly, to the
// nanosecond (nothing handed out, nor expired, a nanosecond early), and
// moves time instead of waiting. Without, it uses the real clock (the
// store's clock must then be the machine's, as Redis's TIME is for a
// local server) and waits for real. Instants the store computes from its
// now (a due time after a delay, a deadline after Extend) are then
// accepted between the readings taken before and after the call, widened
// by the longest call and a millisecond; but whether a store is early is
// judged exactly, against the store's own readings: every message a Claim
// hands out is due by that claim's Now, and every lease Expired returns
// has its deadline at or before that call's Now. Claim/NeverBeforeDue
// claims without sleeping around due times a few milliseconds away, so
// that a store 1 ms early is caught on every run. The suite writes most
// due times in whole microseconds, which every store keeps.
//
// Bounds: every call of a rule has a ctx that ends after two minutes,
// every wait for the real clock fails the rule after ten seconds, loops
// over a store's answers (claiming everything, paging a List) fail on an
// answer that repeats, and no goroutine of a rule calls the test: it
// records what it saw, and the rule checks it once they have returned.
//
// Order: a store that keeps its orders within a shard only says so by
// implementing store.ShardedOrder, and the suite then checks the rules
// of order (Claim, Expired, the reap, List) in their weaker form, per
// shard, with its Shard. If its Shard tells IDs apart (more than one
// shard), the suite also checks the held leases in their weaker form (a
// message claimed ahead beyond the first Limit-Held may have Lease) and
// the retention rules with IDs of one shard and a MaxCount of 1, which is
// every shard's share of it.
//
// Series: the group Series checks the four methods of a
// store.SeriesKeeper (AdvanceSeries, Series, ListSeries, DeleteSeries).
// A store that is none skips it; one that cannot keep series as
// configured passes it by returning an error wrapping
// store.ErrSeriesUnsupported from each, and writing nothing.
//
// Pause: the group Pause checks the SetPaused of a store.Pauser and what
// it does to Claim, Confirm and Stats. A store that is none skips it; one
// that cannot pause as configured passes it by returning an error
// wrapping store.ErrPauseUnsupported.
//
// What the suite leaves to each store's own tests: a crash (a process
// killed rather than a handle closed), and what a Notifier sends without
// a write (it checks that a new earliest message and a resume on another
// handle wake it, and that the channel given back by Wakeups' stop
// receives no more). broken_test.go runs the suite against stores that
// each break one rule, and requires each run to fail in that rule.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// Harness opens the stores of the suite. New, Reopen and Second are
// required; Now and Advance drive the store's clock where it has one the
// suite can move (both nil: the suite uses the real clock).
type Harness struct {
	// New makes a fresh, empty backend and returns a handle on it. The
	// harness closes what it opens when the test ends (t.Cleanup);
	// closing a handle twice must be harmless.
	New func(t *testing.T) store.Store
	// Reopen closes s, a handle that New, Reopen or Second returned
	// (it may be closed already), and opens the same backend again, as
	// a process restarting would, on the same clock: the suite checks
	// that everything s held is there (durability, pause, series, leases
	// in flight).
	Reopen func(t *testing.T, s store.Store) store.Store
	// Second opens another handle on the backend of s, which stays
	// open, as a second process would: the suite checks what one handle
	// sees of the other's writes (Confirm and Cancel, claims, pause,
	// series, a Notifier's wake-ups). A backend that cannot be opened
	// twice at once calls t.Skip with the reason, which skips the group
	// Handles and nothing else.
	Second  func(t *testing.T, s store.Store) store.Store
	Now     func() time.Time
	Advance func(d time.Duration)
}

// Run runs every rule of the store.Store contract against stores made by h.
func Run(t *testing.T, h Harness) {
	require.NotNil(t, h.New, "Harness.New")
	require.NotNil(t, h.Reopen, "Harness.Reopen")
	require.NotNil(t, h.Second, "Harness.Second")
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
	{"Fields", fieldRules},
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
	{"Retention", retentionRules},
	{"Requeue", requeueRules},
	{"Get", getRules},
	{"List", listRules},
	{"Stats", statsRules},
	{"Time", timeRules},
	{"Context", contextRules},
	{"Close", closeRules},
	{"Series", seriesRules},
	{"Pause", pauseRules},
	{"Notifier", notifierRules},
	{"Restart", restartRules},
	{"Handles", handleRules},
}

// ruleTimeout bounds the calls of one rule: every call gets a ctx that
// ends then, so that a store that hangs fails the rule rather than the
// binary.
const ruleTimeout = 2 * time.Minute

// env is what a rule works with: a fresh store, its test, and the clock.
type env struct {
	t   *testing.T
	h   Harness
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
	ctx, cancel := context.WithTimeout(context.Background(), ruleTimeout)
	t.Cleanup(cancel)
	e := &env{t: t, h: h, ctx: ctx, mock: h.Now != nil, nowFn: h.Now, advance: h.Advance}
	if !e.mock {
		e.nowFn, e.advance = time.Now, time.Sleep
	}
	e.s = h.New(t)
	require.NotNil(t, e.s, "Harness.New returned nil")
	return e
}

// reopen closes the store and opens its backend again (Harness.Reopen).
func (e *env) reopen() {
	e.t.Helper()
	e.s = e.h.Reopen(e.t, e.s)
	require.NotNil(e.t, e.s, "Harness.Reopen returned nil")
}

// second opens a second handle on the store's backend (Harness.Second),
// as an env of its own on the same test and clock.
func (e *env) second() *env {
	e.t.Helper()
	s := e.h.Second(e.t, e.s)
	require.NotNil(e.t, s, "Harness.Second returned nil")
	o := *e
	o.s = s
	return &o
}

// now is the clock's reading, in whole microseconds.
func (e *env) now() time.Time { return e.nowFn().Truncate(time.Microsecond) }

// storeNow is the store's own clock, as an empty Claim reports it
// (Claimed.Now): the rules that compare instants on the real clock
// compare them with the store's readings, not the test's.
func (e *env) storeNow() time.Time {
	e.t.Helper()
	c := e.claim(claimArgs{Limit: 0, Lease: time.Minute})
	return c.Now
}

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
// longest call (see env.span) and a millisecond. It is for instants the
// store computes from its now and the test can only bracket; whether a
// store is early is checked against the store's own readings instead
// (see requireNotBefore).
func (e *env) requireBetween(got, lo, hi time.Time, what string) {
	e.t.Helper()
	slack := time.Duration(0)
	if !e.mock {
		slack = hi.Sub(lo) + e.span + time.Millisecond
	}
	require.False(e.t, got.Before(lo.Add(-slack)) || got.After(hi.Add(slack)),
		"%s: %v is not between %v and %v (slack %v)", what, got, lo, hi, slack)
}

// requireNotBefore checks, exactly and on any clock, that the store's
// reading now is not before at: what the store did at now (hand out a
// message, count a lease expired) it may do at at, never before.
func (e *env) requireNotBefore(now, at time.Time, what string) {
	e.t.Helper()
	require.False(e.t, now.Before(at), "%s: the store's now %v is %v before %v", what, now, at.Sub(now), at)
}

// requireInstant checks that got is want, an instant the store reported
// (exactly on a mock clock; see requireBetween for the real one).
func (e *env) requireInstant(want, got time.Time, what string) {
	e.t.Helper()
	e.requireBetween(got, want, want, what)
}

// maxWait bounds every wait of a rule on the real clock.
const maxWait = 10 * time.Second

// waitPast lets the store's clock pass at: it moves a mock clock just past
// it, or waits for the real clock to pass it by the longest call (see
// env.span) and a millisecond. A store of several nodes moves the instants
// of one call to the clock of one node as if its nodes had answered at
// once; they answer within the call, so an instant it gives may be up to
// the call's length before the one its node keeps (a lease's deadline on
// a cluster: 3-5 ms seen under load, where Expired then found nothing).
// An instant more than maxWait away fails the rule rather than hang it.
func (e *env) waitPast(at time.Time) {
	e.t.Helper()
	if e.mock {
		if d := at.Sub(e.nowFn()); d >= 0 {
			e.advance(d + time.Microsecond)
		}
		return
	}
	limit := time.Now().Add(maxWait)
	for {
		d := time.Until(at) + e.span + time.Millisecond
		if d <= 0 {
			return
		}
		require.False(e.t, time.Now().Add(d).After(limit), "waiting for %v: more than %v away", at, maxWait)
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

// leaseExpired is the error text the suite's reap gives an expired lease
// (a queue gives its own; the store keeps whatever it is given).
const leaseExpired = "lease expired"

// retryPolicy is how the suite's reap ends an expired lease, as a queue
// would: death from the attempt MaxAttempts on, and otherwise pending
// again after Backoff(attempt) (nil: at once).
type retryPolicy struct {
	MaxAttempts int
	Backoff     func(attempt int) time.Duration
	Retention   store.Retention
}

// reaped is what the suite's reap did.
type reaped struct {
	Returned, Dead             int
	Now, NextDue, NextDeadline time.Time
}

// tryReap reaps as a queue does: Expired, then a fenced Retry with
// RetryParams.Expired for each lease (a lease acked, ended or extended
// since is skipped), then Expired again for the hints. Each lease
// Expired returns must have expired on the store's own clock.
func (e *env) tryReap(limit int, p retryPolicy) (reaped, error) {
	x, err := e.s.Expired(e.ctx, max(limit, 0))
	if err != nil {
		return reaped{}, err
	}
	for _, l := range x.Leases {
		if x.Now.Before(l.Deadline) {
			return reaped{}, fmt.Errorf("the store's Expired returned %s, whose deadline %v is after its Now %v", l.ID, l.Deadline, x.Now)
		}
	}
	var r reaped
	for _, l := range x.Leases {
		rp := store.RetryParams{Lease: l.Ref(), Error: leaseExpired, Expired: true,
			Dead: l.Attempt >= p.MaxAttempts, Retention: p.Retention}
		if !rp.Dead && p.Backoff != nil {
			rp.After = p.Backoff(l.Attempt)
		}
		switch err := e.s.Retry(e.ctx, rp); {
		case errors.Is(err, store.ErrLeaseLost):
		case err != nil:
			return r, err
		case rp.Dead:
			r.Dead++
		default:
			r.Returned++
		}
	}
	after, err := e.s.Expired(e.ctx, 0)
	if err != nil {
		return r, err
	}
	r.Now, r.NextDue, r.NextDeadline = after.Now, after.NextDue, after.NextDeadline
	return r, nil
}
