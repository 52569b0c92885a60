package storetest

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// noBackoff is a retry policy of 10 attempts without back-off.
var noBackoff = retryPolicy{MaxAttempts: 10, Backoff: func(int) time.Duration { return 0 }}

var leaseRules = []rule{
	{"FencingAfterReclaim", func(e *env) {
		e.enqueue(msg("a", e.past()))
		old := e.claimOne("a", time.Millisecond)
		e.waitPast(old.Deadline)
		require.Equal(e.t, 1, e.reap(10, noBackoff).Returned)
		l := e.claimOne("a", time.Hour)
		e.requireLost(old, "of an expired lease, after the message was claimed again")
		require.NoError(e.t, e.s.Confirm(e.ctx, store.ConfirmParams{Lease: store.LeaseRef{ID: "a", Token: l.Token}}), "the new lease is untouched")
		e.ack(l)
		e.requireLost(l, "after Ack")
	}},
	{"FencingAfterReplace", func(e *env) {
		e.enqueue(msg("a", e.past()))
		old := e.claimOne("a", time.Hour)
		e.enqueue(msg("a", e.past()))
		e.requireLost(old, "after an Enqueue replaced the message")
		l := e.claimOne("a", time.Hour)
		e.ack(l)
	}},
	{"FencingOfAnotherMessage", func(e *env) {
		e.enqueue(msg("a", e.past()), msg("b", e.past()))
		ls := e.claimAll(time.Hour)
		require.Len(e.t, ls, 2)
		wrong := ls[0]
		wrong.ID = ls[1].ID
		if wrong.Token != ls[1].Token {
			e.requireLost(wrong, "with the token of another message")
		}
	}},
	{"AnExpiredLeaseStillAcks", func(e *env) {
		// Until the message is reaped or claimed again.
		e.enqueue(msg("a", e.past()))
		l := e.claimOne("a", time.Millisecond)
		e.waitPast(l.Deadline)
		e.ack(l)
		e.requireCounts(0, 0, 0)
	}},
	{"TokensGrow", func(e *env) {
		// A claim's token is greater than every token the message had,
		// through retries, reaps, replacements and requeues.
		var tokens []uint64
		claim := func(lease time.Duration) store.Lease {
			l := e.claimOne("a", lease)
			tokens = append(tokens, l.Token)
			return l
		}
		e.enqueue(msg("a", e.past()))
		e.retry(claim(time.Hour), store.RetryParams{})
		claim(time.Hour)
		e.enqueue(msg("a", e.past())) // replaces the message in flight
		l := claim(time.Millisecond)
		e.waitPast(l.Deadline)
		require.Equal(e.t, 1, e.reap(10, noBackoff).Returned)
		e.retry(claim(time.Hour), store.RetryParams{Dead: true, Error: "dead"})
		require.NoError(e.t, e.s.Requeue(e.ctx, store.RequeueParams{ID: "a", Due: time.Time{}}))
		e.releaseOK(claim(time.Hour), 0)
		claim(time.Hour)
		e.enqueue(msg("a", e.now().Add(aheadOf)))
		tokens = append(tokens, e.claim(claimArgs{Limit: 1, Lease: time.Minute, Ahead: time.Minute}).Leases[0].Token)
		require.True(e.t, e.cancel("a"))
		e.enqueue(msg("a", e.past()))
		claim(time.Hour)
		require.True(e.t, slices.IsSorted(tokens) && len(slices.Compact(slices.Clone(tokens))) == len(tokens),
			"tokens in the order of the claims: %v", tokens)
	}},
}

var retryRules = []rule{
	{"BackOff", func(e *env) {
		e.enqueue(msg("a", e.past()))
		l := e.claimOne("a", time.Minute)
		delay := e.short()
		before, after := e.around(func() { e.retry(l, store.RetryParams{After: delay, Error: "first"}) })
		info := e.get("a")
		require.Equal(e.t, store.Pending, info.State)
		e.requireBetween(info.Due, before.Add(delay), after.Add(delay), "due the delay after now")
		require.Equal(e.t, 1, info.Attempt, "the attempt made")
		require.Equal(e.t, "first", info.LastError)
		require.True(e.t, info.Deadline.IsZero())
		var c store.Claimed
		_, after = e.around(func() { c = e.claim(claimArgs{Limit: 1, Lease: time.Minute}) })
		if after.Add(time.Millisecond).Before(info.Due) { // on the real clock, if the claim was surely early
			require.Empty(e.t, c.Leases, "not due yet")
		}
		if len(c.Leases) == 1 {
			l = c.Leases[0]
		} else {
			e.waitPast(info.Due)
			l = e.claimOne("a", time.Minute)
		}
		require.Equal(e.t, 2, l.Attempt)
		require.Equal(e.t, "first", l.LastError, "the lease carries the last attempt's error")
	}},
	{"DiesWhenTold", func(e *env) {
		// Death is the caller's decision (RetryParams.Dead), whatever
		// the attempt: the store applies it.
		e.enqueue(msg("a", e.past()))
		e.retry(e.claimOne("a", time.Minute), store.RetryParams{Error: "first"})
		l := e.claimOne("a", time.Minute)
		before, after := e.around(func() { e.retry(l, store.RetryParams{After: time.Hour, Dead: true, Error: "second"}) })
		info := e.get("a")
		e.requireBetween(info.DiedAt, before, after, "DiedAt")
		require.Equal(e.t, utc(store.Info{ID: "a", Payload: []byte("payload of a"), State: store.Dead, Attempt: 2,
			LastError: "second", EnqueuedAt: info.EnqueuedAt, DiedAt: info.DiedAt}), utc(info))
		e.requireCounts(0, 0, 1)
		e.requireLost(l, "after Retry")

		e.enqueue(msg("b", e.past()))
		e.retry(e.claimOne("b", time.Minute), store.RetryParams{Dead: true})
		require.Equal(e.t, store.Dead, e.get("b").State, "dead on its first attempt, if told")
		e.requireCounts(0, 0, 2)
	}},
	{"LastError", func(e *env) {
		// The store keeps the text it is given; the Queue cuts it to
		// MaxErrorLen before (see store.TruncateErrorText).
		e.enqueue(msg("a", e.past()))
		e.retry(e.claimOne("a", time.Minute), store.RetryParams{Error: "boom"})
		require.Equal(e.t, "boom", e.get("a").LastError)
		e.retry(e.claimOne("a", time.Minute), store.RetryParams{})
		require.Equal(e.t, "boom", e.get("a").LastError, "an empty text keeps the one before")
		long := store.TruncateErrorText(strings.Repeat("é", store.MaxErrorLen)) // the longest a Queue gives
		e.retry(e.claimOne("a", time.Minute), store.RetryParams{Error: long})
		require.Equal(e.t, long, e.get("a").LastError, "kept whole")
		require.Equal(e.t, long, e.claimOne("a", time.Minute).LastError)
	}},
	{"ExpiredOnlyEndsAnExpiredLease", func(e *env) {
		e.enqueue(msg("a", e.past()))
		l := e.claimOne("a", time.Hour)
		before := e.get("a")
		require.ErrorIs(e.t, e.tryRetry(l, store.RetryParams{Expired: true, Error: leaseExpired}), store.ErrLeaseLost,
			"the deadline has not passed")
		require.Equal(e.t, utc(before), utc(e.get("a")), "and nothing changed")
		require.NoError(e.t, e.s.Extend(e.ctx, store.ExtendParams{Lease: store.LeaseRef{ID: "a", Token: l.Token}, By: time.Millisecond}))
		e.waitPast(e.get("a").Deadline)
		e.retry(l, store.RetryParams{Expired: true, Error: leaseExpired})
		info := e.get("a")
		require.Equal(e.t, store.Pending, info.State)
		require.Equal(e.t, leaseExpired, info.LastError)
	}},
	{"UnhandedTakesBackTheAttempt", func(e *env) {
		// A lease whose message was not handled (RetryParams.Unhanded)
		// ends with the attempt its claim counted taken back, never
		// below zero, and its LastError as it was; without Unhanded (a
		// failure) the attempt stays counted.
		e.enqueue(msg("a", e.past()))
		e.retry(e.claimOne("a", time.Minute), store.RetryParams{Error: "first"})
		l := e.claimOne("a", time.Minute)
		require.Equal(e.t, 2, l.Attempt)
		e.retry(l, store.RetryParams{Unhanded: true})
		info := e.get("a")
		require.Equal(e.t, store.Pending, info.State)
		require.Equal(e.t, 1, info.Attempt, "the claim's attempt taken back")
		require.Equal(e.t, "first", info.LastError, "kept")
		e.requireLost(l, "after a Retry with Unhanded")
		l = e.claimOne("a", time.Minute)
		require.Equal(e.t, 2, l.Attempt, "the next claim counts the attempt again")
		e.retry(l, store.RetryParams{Error: "second"})
		require.Equal(e.t, 2, e.get("a").Attempt, "a failure stays counted")
		require.True(e.t, e.cancel("a"))

		// From the first attempt: back to zero, then never below it.
		e.enqueue(msg("b", e.past()))
		for range 2 {
			l = e.claimOne("b", time.Minute)
			require.Equal(e.t, 1, l.Attempt)
			e.retry(l, store.RetryParams{Unhanded: true})
			info = e.get("b")
			require.Equal(e.t, 0, info.Attempt, "the claim's attempt taken back, not below zero")
			require.Empty(e.t, info.LastError)
		}
		require.True(e.t, e.cancel("b"))

		// A lease claimed ahead and never confirmed, given back as the
		// reap gives back an expired one (with Expired): as it was before
		// its claim.
		e.enqueue(msg("c", e.now().Add(e.soon())))
		c := e.claim(claimArgs{Limit: 1, Lease: e.short(), Ahead: time.Minute})
		require.Len(e.t, c.Leases, 1)
		l = c.Leases[0]
		require.True(e.t, l.Ahead, "claimed ahead")
		require.Equal(e.t, 1, l.Attempt)
		e.waitPast(l.Deadline)
		e.retry(l, store.RetryParams{Expired: true, Unhanded: true})
		info = e.get("c")
		require.Equal(e.t, store.Pending, info.State)
		require.Equal(e.t, 0, info.Attempt, "a held lease costs no attempt")
		require.Empty(e.t, info.LastError)
	}},
}

// releaseOK releases l, due after from now.
func (e *env) releaseOK(l store.Lease, after time.Duration) {
	e.t.Helper()
	require.NoError(e.t, e.s.Retry(e.ctx, store.RetryParams{Lease: store.LeaseRef{ID: l.ID, Token: l.Token}, After: after}))
}

var releaseRules = []rule{
	{"EqualDueKeepsWriteOrder", func(e *env) {
		// Messages given back with one delay at one instant (a mock
		// clock) are due at one instant, in the order of the Retries; on
		// the real clock their due times follow that order anyway.
		due := e.past()
		e.enqueue(msg("w", due), msg("x", due), msg("y", due))
		byID := map[string]store.Lease{}
		for _, l := range e.claimAll(time.Hour) {
			byID[l.ID] = l
		}
		d := e.short()
		for _, id := range []string{"y", "w", "x"} {
			e.releaseOK(byID[id], d)
		}
		want := []string{"y", "w", "x"}
		if e.mock {
			e.enqueue(msg("z", e.now().Add(d))) // at the same instant, after them
			want = append(want, "z")
		}
		infos, _ := e.listOnce(store.Pending, 2, nil)
		var listed []string
		for _, info := range infos {
			listed = append(listed, info.ID)
		}
		e.requireOrder(want, listed, "List: in the order of the writes")
		e.waitPast(infos[len(infos)-1].Due)
		e.requireOrder(want, ids(e.claimAll(time.Minute)), "Claim: in the order of the writes")
	}},
	{"GivesBackUnhandled", func(e *env) {
		e.enqueue(msg("a", e.past()))
		e.retry(e.claimOne("a", time.Minute), store.RetryParams{Error: "first"})
		l := e.claimOne("a", time.Minute)
		require.Equal(e.t, 2, l.Attempt)
		delay := e.short()
		before, after := e.around(func() { e.releaseOK(l, delay) })
		info := e.get("a")
		require.Equal(e.t, store.Pending, info.State)
		e.requireBetween(info.Due, before.Add(delay), after.Add(delay), "due the delay after now")
		require.Equal(e.t, 2, info.Attempt, "the claim stays counted")
		require.Equal(e.t, "first", info.LastError, "kept")
		e.requireLost(l, "after Release")
		e.waitPast(info.Due)
		require.Equal(e.t, 3, e.claimOne("a", time.Minute).Attempt)
	}},
	{"AHeldLease", func(e *env) {
		// A lease claimed ahead and not confirmed, given back: pending
		// again, and a Cancel deletes it.
		l := e.claimAhead("a", "v1")
		e.releaseOK(l, 0)
		require.Equal(e.t, store.Pending, e.get("a").State)
		e.requireLost(l, "after Release")
		require.True(e.t, e.cancel("a"))
		e.requireCounts(0, 0, 0)
	}},
}

var expiredRules = []rule{
	{"NeverBeforeDeadline", func(e *env) {
		// A lease is expired at its deadline on the store's clock, not a
		// nanosecond before: neither Expired nor a Retry with Expired
		// counts it before.
		e.enqueue(msg("a", e.past()))
		if !e.mock {
			// The store's own readings: whenever Expired returns the
			// lease, its Now is at or after the deadline (see
			// env.expired), polled without sleeping around the deadline.
			l := e.claimOne("a", 20*time.Millisecond)
			time.Sleep(time.Until(l.Deadline) - 3*time.Millisecond)
			deadline := time.Now().Add(maxWait)
			for len(e.expired(10).Leases) == 0 {
				require.True(e.t, time.Now().Before(deadline), "not expired %v after its deadline", maxWait)
			}
			return
		}
		l := e.claimOne("a", 10*time.Second)
		e.advance(l.Deadline.Sub(e.nowFn()) - time.Nanosecond)
		require.Empty(e.t, e.expired(10).Leases, "a nanosecond before its deadline")
		require.ErrorIs(e.t, e.tryRetry(l, store.RetryParams{Expired: true, Error: leaseExpired}), store.ErrLeaseLost,
			"a Retry with Expired a nanosecond before its deadline")
		require.Equal(e.t, store.InFlight, e.get("a").State)
		e.advance(time.Nanosecond)
		x := e.expired(10)
		require.Len(e.t, x.Leases, 1, "expired at its deadline")
		e.retry(l, store.RetryParams{Expired: true, Error: leaseExpired})
		require.Equal(e.t, store.Pending, e.get("a").State)
	}},
	{"ReadsOnlyEarliestFirst", func(e *env) {
		e.enqueue(msg("a", e.past()), msg("b", e.past()), msg("c", e.past()), msg("d", e.past()))
		var ls []store.Lease
		for i, lease := range []time.Duration{30, 10, 20, 3600000} {
			c := e.claim(claimArgs{Limit: 1, Lease: lease * time.Millisecond})
			require.Len(e.t, c.Leases, 1, "claim %d", i)
			ls = append(ls, c.Leases[0])
		}
		slices.SortFunc(ls, func(a, b store.Lease) int { return a.Deadline.Compare(b.Deadline) })
		e.waitPast(ls[2].Deadline)
		x := e.expired(2)
		require.Len(e.t, x.Leases, 2, "a limit of two")
		byID := make(map[string]store.Lease)
		for _, l := range ls {
			byID[l.ID] = l
		}
		var got []string
		for _, g := range x.Leases {
			l := byID[g.ID]
			require.Equal(e.t, l.Token, g.Token, "%s", g.ID)
			require.Equal(e.t, 1, g.Attempt)
			e.requireInstant(l.Deadline, g.Deadline, "Deadline")
			got = append(got, g.ID)
		}
		e.requirePrefix(ids(ls[:3]), got, "earliest deadline first")
		e.requireInstant(ls[0].Deadline, x.NextDeadline, "NextDeadline: the first expired")
		require.True(e.t, x.NextDue.IsZero(), "none pending")
		e.enqueue(msg("p", e.now().Add(time.Hour)))
		e.requireInstant(e.get("p").Due, e.expired(0).NextDue, "NextDue")
		x = e.expired(10)
		require.Len(e.t, x.Leases, 3, "not the lease that has not expired")
		require.Empty(e.t, e.expired(0).Leases, "a limit of zero")
		e.requireCounts(1, 4, 0)
		for _, l := range ls[:3] {
			require.Equal(e.t, store.InFlight, e.get(l.ID).State, "Expired changes nothing")
			require.NoError(e.t, e.s.Confirm(e.ctx, store.ConfirmParams{Lease: store.LeaseRef{ID: l.ID, Token: l.Token}}), "the lease is current")
		}
	}},
	{"ReportsHeld", func(e *env) {
		// Expired reports Held for a lease claimed ahead, held or not
		// (Lease.Ahead), and never confirmed: its message was not handed
		// out. Not for one handed out, nor for one confirmed.
		lease := time.Minute
		if !e.mock {
			lease = time.Second // long enough for the claims and the Confirm below
		}
		claim := func(id string, due time.Time, a claimArgs) store.Lease {
			e.t.Helper()
			e.enqueue(msg(id, due))
			c := e.claim(a)
			require.Len(e.t, c.Leases, 1)
			require.Equal(e.t, id, c.Leases[0].ID)
			return c.Leases[0]
		}
		handed := claim("handed", e.past(), claimArgs{Limit: 1, Lease: lease})
		require.False(e.t, handed.Ahead, "handed out")
		held := e.claimHeld(lease, lease, msg("held", e.now().Add(e.soon())))[0]
		ahead := claim("ahead", e.now().Add(e.soon()), claimArgs{Limit: 1, Lease: lease, Ahead: time.Minute})
		require.True(e.t, ahead.Ahead, "claimed ahead")
		confirmed := claim("confirmed", e.now().Add(e.soon()), claimArgs{Limit: 1, Lease: lease, Ahead: time.Minute})
		require.True(e.t, confirmed.Ahead, "claimed ahead")
		require.NoError(e.t, e.s.Confirm(e.ctx, store.ConfirmParams{Lease: store.LeaseRef{ID: confirmed.ID, Token: confirmed.Token}}))
		for _, l := range []store.Lease{handed, held, ahead, confirmed} {
			e.waitPast(l.Deadline)
		}

		x := e.expired(10)
		got := map[string]bool{}
		for _, l := range x.Leases {
			got[l.ID] = l.Held
		}
		require.Equal(e.t, map[string]bool{"handed": false, "held": true, "ahead": true, "confirmed": false}, got,
			"Held of each expired lease")
	}},
}

// soon is how far in the future a message claimed ahead is due when the
// rule waits for its lease to expire (its deadline is after its due
// time): aheadOf on a mock clock, a second on the real clock, where the
// rule waits for it.
func (e *env) soon() time.Duration {
	if e.mock {
		return aheadOf
	}
	return time.Second
}

var extendRules = []rule{
	{"MovesTheDeadline", func(e *env) {
		e.enqueue(msg("a", e.past()))
		l := e.claimOne("a", e.short())
		before, after := e.around(func() {
			require.NoError(e.t, e.s.Extend(e.ctx, store.ExtendParams{Lease: store.LeaseRef{ID: "a", Token: l.Token}, By: time.Hour}))
		})
		d := e.get("a").Deadline
		e.requireBetween(d, before.Add(time.Hour), after.Add(time.Hour), "by from now")
		require.ErrorIs(e.t, e.s.Extend(e.ctx, store.ExtendParams{Lease: store.LeaseRef{ID: "a", Token: l.Token + 1}, By: time.Hour}), store.ErrLeaseLost, "another token")
		require.True(e.t, d.Equal(e.get("a").Deadline), "unchanged")
		e.waitPast(l.Deadline)
		require.Zero(e.t, e.reap(10, noBackoff).Returned, "the old deadline is gone")

		before, after = e.around(func() {
			require.NoError(e.t, e.s.Extend(e.ctx, store.ExtendParams{Lease: store.LeaseRef{ID: "a", Token: l.Token}, By: 5 * time.Millisecond}))
		})
		d = e.get("a").Deadline
		e.requireBetween(d, before.Add(5*time.Millisecond), after.Add(5*time.Millisecond), "a shorter lease")
		e.waitPast(d)
		require.Equal(e.t, 1, e.reap(10, noBackoff).Returned)
	}},
}

var reapRules = []rule{
	{"AckRacingAReap", func(e *env) {
		// The lease expired and the reap read it: the holder's Ack and
		// the reap's Retry race, and exactly one wins.
		e.reapRace("ack", func(l store.Lease) error { return e.s.Ack(e.ctx, l.Ref()) }, func(id string, acked bool) {
			if acked {
				e.requireNotFound(id)
				return
			}
			info := e.get(id)
			require.Equal(e.t, store.Pending, info.State, id)
			require.Equal(e.t, leaseExpired, info.LastError, id)
		})
		e.requireCounts(e.stats().Pending, 0, 0)
	}},
	{"ExtendRacingAReap", func(e *env) {
		// The lease expired and the reap read it: the holder's Extend and
		// the reap's Retry race, and exactly one wins; an Extend that won
		// keeps the lease, whose deadline is then after now.
		e.reapRace("extend", func(l store.Lease) error {
			return e.s.Extend(e.ctx, store.ExtendParams{Lease: l.Ref(), By: time.Hour})
		}, func(id string, extended bool) {
			info := e.get(id)
			if extended {
				require.Equal(e.t, store.InFlight, info.State, id)
				require.Empty(e.t, e.expired(100).Leases, "%s: extended by an hour", id)
				return
			}
			require.Equal(e.t, store.Pending, info.State, id)
		})
	}},
	{"LeasesNotExpiredStay", func(e *env) {
		e.enqueue(msg("a", e.past()))
		l := e.claimOne("a", time.Hour)
		r := e.reap(10, noBackoff)
		require.Zero(e.t, r.Returned+r.Dead)
		e.requireInstant(l.Deadline, r.NextDeadline, "NextDeadline")
		require.True(e.t, r.NextDue.IsZero())
		require.Equal(e.t, store.InFlight, e.get("a").State)
	}},
	{"EarliestDeadlineFirst", func(e *env) {
		e.enqueue(msg("a", e.past()), msg("b", e.past()), msg("c", e.past()))
		var ls []store.Lease
		for i, lease := range []time.Duration{30, 10, 20} {
			c := e.claim(claimArgs{Limit: 1, Lease: lease * time.Millisecond})
			require.Len(e.t, c.Leases, 1, "claim %d", i)
			ls = append(ls, c.Leases[0])
		}
		slices.SortFunc(ls, func(a, b store.Lease) int { return a.Deadline.Compare(b.Deadline) })
		e.waitPast(ls[2].Deadline)
		for i := range ls {
			require.Equal(e.t, 1, e.reap(1, noBackoff).Returned, "a limit of one")
			var reaped []string
			for _, l := range ls {
				if e.get(l.ID).State == store.Pending {
					reaped = append(reaped, l.ID)
				}
			}
			require.Len(e.t, reaped, i+1)
			e.requirePrefix(ids(ls), reaped, "reaped by deadline")
		}
	}},
	{"BackOffAndDeath", func(e *env) {
		var (
			mu     sync.Mutex
			called []int
		)
		p := retryPolicy{MaxAttempts: 2, Backoff: func(attempt int) time.Duration {
			mu.Lock()
			defer mu.Unlock()
			called = append(called, attempt)
			return time.Duration(attempt) * time.Hour
		}}
		e.enqueue(msg("a", e.past()))
		la := e.claimOne("a", time.Millisecond)
		e.enqueue(msg("b", e.past()))
		e.retry(e.claimOne("b", time.Hour), store.RetryParams{Error: "first"})
		lb := e.claimOne("b", time.Millisecond)
		require.Equal(e.t, 2, lb.Attempt)
		e.waitPast(la.Deadline)
		e.waitPast(lb.Deadline)
		var r reaped
		before, after := e.around(func() { r = e.reap(10, p) })
		require.Equal(e.t, 1, r.Returned, "a, attempt 1 of 2")
		require.Equal(e.t, 1, r.Dead, "b, attempt 2 of 2")
		require.Equal(e.t, []int{1}, called, "Backoff is asked for the message that goes on, with its attempt")
		e.requireBetween(r.Now, before, after, "Reaped.Now")

		a := e.get("a")
		require.Equal(e.t, store.Pending, a.State)
		require.Equal(e.t, 1, a.Attempt)
		require.Equal(e.t, leaseExpired, a.LastError)
		e.requireBetween(a.Due, before.Add(time.Hour), after.Add(time.Hour), "due Backoff(1) after now")
		e.requireInstant(a.Due, r.NextDue, "Reaped.NextDue")
		require.True(e.t, r.NextDeadline.IsZero(), "none left in flight")

		b := e.get("b")
		require.Equal(e.t, store.Dead, b.State)
		require.Equal(e.t, leaseExpired, b.LastError, "replaces the text before")
		e.requireBetween(b.DiedAt, before, after, "DiedAt")
		e.requireCounts(1, 0, 1)
	}},
	{"WithoutBackoffDueNow", func(e *env) {
		e.enqueue(msg("a", e.past()))
		l := e.claimOne("a", time.Millisecond)
		e.waitPast(l.Deadline)
		before, after := e.around(func() { require.Equal(e.t, 1, e.reap(10, retryPolicy{MaxAttempts: 5}).Returned) })
		e.requireBetween(e.get("a").Due, before, after, "a nil Backoff: due now")
	}},
}
