package storetest

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// noBackoff is a retry policy of 10 attempts without back-off.
var noBackoff = durable.RetryPolicy{MaxAttempts: 10, Backoff: func(int) time.Duration { return 0 }}

var leaseRules = []rule{
	{"FencingAfterReclaim", func(e *env) {
		e.enqueue(msg("a", e.past()))
		old := e.claimOne("a", time.Millisecond)
		e.waitPast(old.Deadline)
		require.Equal(e.t, 1, e.reap(10, noBackoff).Returned)
		l := e.claimOne("a", time.Hour)
		e.requireLost(old, "of an expired lease, after the message was claimed again")
		require.NoError(e.t, e.s.Confirm(e.ctx, "a", l.Token), "the new lease is untouched")
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
		claim := func(lease time.Duration) durable.Lease {
			l := e.claimOne("a", lease)
			tokens = append(tokens, l.Token)
			return l
		}
		e.enqueue(msg("a", e.past()))
		require.False(e.t, e.retry(claim(time.Hour), 0, 10, ""))
		claim(time.Hour)
		e.enqueue(msg("a", e.past())) // replaces the message in flight
		l := claim(time.Millisecond)
		e.waitPast(l.Deadline)
		require.Equal(e.t, 1, e.reap(10, noBackoff).Returned)
		require.True(e.t, e.retry(claim(time.Hour), 0, 1, "dead"))
		require.NoError(e.t, e.s.Requeue(e.ctx, "a", time.Time{}))
		claim(time.Hour)
		e.enqueue(msg("a", e.now().Add(aheadOf)))
		tokens = append(tokens, e.claim(claimArgs{limit: 1, lease: time.Minute, ahead: time.Minute}).Leases[0].Token)
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
		var dead bool
		delay := e.short()
		before, after := e.around(func() { dead = e.retry(l, delay, 5, "first") })
		require.False(e.t, dead)
		info := e.get("a")
		require.Equal(e.t, durable.Pending, info.State)
		e.requireBetween(info.Due, before.Add(delay), after.Add(delay), "due the delay after now")
		require.Equal(e.t, 1, info.Attempt, "the attempt made")
		require.Equal(e.t, "first", info.LastError)
		require.True(e.t, info.Deadline.IsZero())
		var c durable.Claimed
		_, after = e.around(func() { c = e.claim(claimArgs{limit: 1, lease: time.Minute}) })
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
	{"DiesAtMaxAttempts", func(e *env) {
		e.enqueue(msg("a", e.past()))
		require.False(e.t, e.retry(e.claimOne("a", time.Minute), 0, 2, "first"), "attempt 1 of 2")
		l := e.claimOne("a", time.Minute)
		var dead bool
		before, after := e.around(func() { dead = e.retry(l, time.Hour, 2, "second") })
		require.True(e.t, dead, "attempt 2 of 2")
		info := e.get("a")
		e.requireBetween(info.DiedAt, before, after, "DiedAt")
		require.Equal(e.t, utc(durable.Info{ID: "a", Payload: []byte("payload of a"), State: durable.Dead, Attempt: 2,
			LastError: "second", EnqueuedAt: info.EnqueuedAt, DiedAt: info.DiedAt}), utc(info))
		e.requireCounts(0, 0, 1)
		e.requireLost(l, "after Retry")

		e.enqueue(msg("b", e.past()))
		require.True(e.t, e.retry(e.claimOne("b", time.Minute), 0, 0, ""), "maxAttempts below the attempt: dead")
	}},
	{"LastError", func(e *env) {
		e.enqueue(msg("a", e.past()))
		require.False(e.t, e.retry(e.claimOne("a", time.Minute), 0, 10, "boom"))
		require.Equal(e.t, "boom", e.get("a").LastError)
		require.False(e.t, e.retry(e.claimOne("a", time.Minute), 0, 10, ""))
		require.Equal(e.t, "boom", e.get("a").LastError, "an empty text keeps the one before")
		long := strings.Repeat("é", durable.MaxErrorLen) // 2 bytes each
		require.False(e.t, e.retry(e.claimOne("a", time.Minute), 0, 10, long))
		require.Equal(e.t, durable.TruncateErrorText(long), e.get("a").LastError, "cut to MaxErrorLen")
		require.Equal(e.t, durable.TruncateErrorText(long), e.claimOne("a", time.Minute).LastError)
	}},
}

var extendRules = []rule{
	{"MovesTheDeadline", func(e *env) {
		e.enqueue(msg("a", e.past()))
		l := e.claimOne("a", e.short())
		before, after := e.around(func() { require.NoError(e.t, e.s.Extend(e.ctx, "a", l.Token, time.Hour)) })
		d := e.get("a").Deadline
		e.requireBetween(d, before.Add(time.Hour), after.Add(time.Hour), "by from now")
		require.ErrorIs(e.t, e.s.Extend(e.ctx, "a", l.Token+1, time.Hour), durable.ErrLeaseLost, "another token")
		require.True(e.t, d.Equal(e.get("a").Deadline), "unchanged")
		e.waitPast(l.Deadline)
		require.Zero(e.t, e.reap(10, noBackoff).Returned, "the old deadline is gone")

		before, after = e.around(func() { require.NoError(e.t, e.s.Extend(e.ctx, "a", l.Token, 5*time.Millisecond)) })
		d = e.get("a").Deadline
		e.requireBetween(d, before.Add(5*time.Millisecond), after.Add(5*time.Millisecond), "a shorter lease")
		e.waitPast(d)
		require.Equal(e.t, 1, e.reap(10, noBackoff).Returned)
	}},
}

var reapRules = []rule{
	{"LeasesNotExpiredStay", func(e *env) {
		e.enqueue(msg("a", e.past()))
		l := e.claimOne("a", time.Hour)
		r := e.reap(10, noBackoff)
		require.Zero(e.t, r.Returned+r.Dead)
		e.requireInstant(l.Deadline, r.NextDeadline, "NextDeadline")
		require.True(e.t, r.NextDue.IsZero())
		require.Equal(e.t, durable.InFlight, e.get("a").State)
	}},
	{"EarliestDeadlineFirst", func(e *env) {
		e.enqueue(msg("a", e.past()), msg("b", e.past()), msg("c", e.past()))
		var ls []durable.Lease
		for i, lease := range []time.Duration{30, 10, 20} {
			c := e.claim(claimArgs{limit: 1, lease: lease * time.Millisecond})
			require.Len(e.t, c.Leases, 1, "claim %d", i)
			ls = append(ls, c.Leases[0])
		}
		slices.SortFunc(ls, func(a, b durable.Lease) int { return a.Deadline.Compare(b.Deadline) })
		e.waitPast(ls[2].Deadline)
		for i, l := range ls {
			require.Equal(e.t, 1, e.reap(1, noBackoff).Returned, "a limit of one")
			require.Equal(e.t, durable.Pending, e.get(l.ID).State, "%s, deadline %d of 3, reaped %d", l.ID, i+1, i+1)
			for _, later := range ls[i+1:] {
				require.Equal(e.t, durable.InFlight, e.get(later.ID).State, "%s: its deadline is later", later.ID)
			}
		}
	}},
	{"BackOffAndDeath", func(e *env) {
		var (
			mu     sync.Mutex
			called []int
		)
		p := durable.RetryPolicy{MaxAttempts: 2, Backoff: func(attempt int) time.Duration {
			mu.Lock()
			defer mu.Unlock()
			called = append(called, attempt)
			return time.Duration(attempt) * time.Hour
		}}
		e.enqueue(msg("a", e.past()))
		la := e.claimOne("a", time.Millisecond)
		e.enqueue(msg("b", e.past()))
		require.False(e.t, e.retry(e.claimOne("b", time.Hour), 0, 10, "first"))
		lb := e.claimOne("b", time.Millisecond)
		require.Equal(e.t, 2, lb.Attempt)
		e.waitPast(la.Deadline)
		e.waitPast(lb.Deadline)
		var r durable.Reaped
		before, after := e.around(func() { r = e.reap(10, p) })
		require.Equal(e.t, 1, r.Returned, "a, attempt 1 of 2")
		require.Equal(e.t, 1, r.Dead, "b, attempt 2 of 2")
		require.Equal(e.t, []int{1}, called, "Backoff is asked for the message that goes on, with its attempt")
		e.requireBetween(r.Now, before, after, "Reaped.Now")

		a := e.get("a")
		require.Equal(e.t, durable.Pending, a.State)
		require.Equal(e.t, 1, a.Attempt)
		require.Equal(e.t, durable.LeaseExpired, a.LastError)
		e.requireBetween(a.Due, before.Add(time.Hour), after.Add(time.Hour), "due Backoff(1) after now")
		e.requireInstant(a.Due, r.NextDue, "Reaped.NextDue")
		require.True(e.t, r.NextDeadline.IsZero(), "none left in flight")

		b := e.get("b")
		require.Equal(e.t, durable.Dead, b.State)
		require.Equal(e.t, durable.LeaseExpired, b.LastError, "replaces the text before")
		e.requireBetween(b.DiedAt, before, after, "DiedAt")
		e.requireCounts(1, 0, 1)
	}},
	{"WithoutBackoffDueNow", func(e *env) {
		e.enqueue(msg("a", e.past()))
		l := e.claimOne("a", time.Millisecond)
		e.waitPast(l.Deadline)
		before, after := e.around(func() { require.Equal(e.t, 1, e.reap(10, durable.RetryPolicy{MaxAttempts: 5}).Returned) })
		e.requireBetween(e.get("a").Due, before, after, "a nil Backoff: due now")
	}},
	{"APanickingBackoffFailsAndChangesNothing", func(e *env) {
		e.enqueue(msg("a", e.past()))
		l := e.claimOne("a", time.Millisecond)
		e.waitPast(l.Deadline)
		before := e.get("a")
		_, err := e.tryReap(10, durable.RetryPolicy{MaxAttempts: 5, Backoff: func(int) time.Duration { panic("boom") }})
		require.Error(e.t, err)
		require.Equal(e.t, utc(before), utc(e.get("a")))
	}},
}
