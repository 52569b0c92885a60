package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var claimRules = []rule{
	{"DueNowIsHandedOut", func(e *env) {
		e.enqueue(msg("a", time.Time{}))
		c := e.claim(claimArgs{Limit: 1, Lease: time.Minute, Ahead: time.Minute})
		require.Len(e.t, c.Leases, 1)
		l := c.Leases[0]
		require.False(e.t, l.Ahead, "due by now: handed out by the claim")
		require.Equal(e.t, 1, l.Attempt)
		require.Equal(e.t, "payload of a", string(l.Payload))
		require.Empty(e.t, l.LastError)
		info := e.get("a")
		require.Equal(e.t, store.InFlight, info.State)
		require.Equal(e.t, 1, info.Attempt)
		e.requireCounts(0, 1, 0)
	}},
	{"NeverBeforeDue", func(e *env) {
		n := e.now()
		e.enqueue(msg("later", n.Add(time.Hour)))
		require.Empty(e.t, e.claim(claimArgs{Limit: 10, Lease: time.Minute}).Leases, "due in an hour")
		require.Empty(e.t, e.claim(claimArgs{Limit: 10, Lease: time.Minute, Ahead: 59 * time.Minute}).Leases,
			"due beyond the horizon of ahead")
		c := e.claim(claimArgs{Limit: 10, Lease: time.Minute, Ahead: 61 * time.Minute})
		require.Len(e.t, c.Leases, 1, "due within the horizon")
		require.True(e.t, c.Leases[0].Ahead, "claimed before its due time: ahead")

		// Not handed out by a claim before its due time, and handed out
		// by the first claim at or after it.
		if e.mock {
			due := e.now().Add(50 * time.Millisecond)
			e.enqueue(msg("soon", due))
			e.advance(due.Sub(e.nowFn()) - time.Nanosecond)
			require.Empty(e.t, e.claim(claimArgs{Limit: 10, Lease: time.Minute}).Leases, "a nanosecond early")
			e.advance(time.Nanosecond)
			l := e.claimOne("soon", time.Minute)
			require.True(e.t, due.Equal(l.Ready), "handed out at its due time")
			return
		}
		e.requireNeverEarly()
	}},
	{"LeaseArithmetic", func(e *env) {
		// Deadline = max(due, now) + lease and Ready = max(due, now).
		past, future := e.past(), e.now().Add(30*time.Second)
		e.enqueue(msg("past", past), msg("future", future))
		var c store.Claimed
		before, after := e.around(func() { c = e.claim(claimArgs{Limit: 2, Lease: 10 * time.Second, Ahead: time.Minute}) })
		require.Len(e.t, c.Leases, 2)
		p, f := c.Leases[0], c.Leases[1]
		require.Equal(e.t, []string{"past", "future"}, []string{p.ID, f.ID}, "earliest first")
		e.requireBetween(c.Now, before, after, "Claimed.Now")
		e.requireBetween(p.Ready, before, c.Now, "Ready of a message due before now: the claim's now")
		require.Equal(e.t, 10*time.Second, p.Deadline.Sub(p.Ready), "Deadline of a message due before now: now + lease")
		require.True(e.t, past.Equal(p.Due), "the lease's Due is the message's")
		require.False(e.t, p.Ahead)
		e.requireInstant(future, f.Ready, "Ready of a message due after now: its due time")
		e.requireInstant(future.Add(10*time.Second), f.Deadline, "Deadline of a message due after now: due + lease")
		require.Equal(e.t, 10*time.Second, f.Deadline.Sub(f.Ready))
		require.True(e.t, f.Ahead)
		require.True(e.t, c.NextDue.IsZero(), "nothing left pending")
		e.requireInstant(p.Deadline, c.NextDeadline, "NextDeadline: the earliest, of a lease just made")
		e.requireInstant(p.Deadline, e.get("past").Deadline, "Get's Deadline")
		e.requireInstant(f.Deadline, e.get("future").Deadline, "Get's Deadline")
	}},
	{"EarliestFirst", func(e *env) {
		n := e.now()
		dues := map[string]time.Time{
			"e": n.Add(-time.Millisecond),
			"d": n.Add(-time.Millisecond - time.Microsecond),
			"c": n.Add(-2 * time.Millisecond),
			"b": n.Add(-time.Second),
			"a": n.Add(-time.Hour),
		}
		for _, id := range []string{"e", "c", "a", "d", "b"} {
			e.enqueue(msg(id, dues[id]))
		}
		var got []store.Lease
		for range dues {
			c := e.claim(claimArgs{Limit: 1, Lease: time.Minute})
			require.Len(e.t, c.Leases, 1)
			got = append(got, c.Leases...)
		}
		e.requireOrder([]string{"a", "b", "c", "d", "e"}, ids(got), "one at a time, earliest first")
		for _, l := range got {
			require.True(e.t, dues[l.ID].Equal(l.Due), "%s: due %v, want %v", l.ID, l.Due, dues[l.ID])
		}
		for i, id := range seqIDs("m", 50) {
			e.enqueue(msg(id, n.Add(-time.Duration(50-i)*time.Millisecond)))
		}
		c := e.claim(claimArgs{Limit: 100, Lease: time.Minute})
		e.requireOrder(seqIDs("m", 50), ids(c.Leases), "in one claim, earliest first")
	}},
	{"EqualDueKeepsWriteOrder", func(e *env) {
		due := e.past()
		var batch []store.Message
		want := seqIDs("z", 20)
		for _, id := range want {
			batch = append(batch, msg(id, due))
		}
		e.enqueue(batch...)
		for _, id := range []string{"b", "a", "c"} {
			e.enqueue(msg(id, due))
			want = append(want, id)
		}
		e.requireOrder(want, ids(e.claimAll(time.Minute)), "the order of the batch, then of the Enqueues")

		// Zero due times: now, equal on a mock clock.
		e.enqueue(msg("y", time.Time{}), msg("x", time.Time{}), msg("w", time.Time{}))
		ls := e.claimAll(time.Minute)
		e.requireOrder([]string{"y", "x", "w"}, ids(ls), "due now")

		// Retries make messages pending in the order of the Retries.
		byID := make(map[string]store.Lease)
		for _, l := range ls {
			byID[l.ID] = l
		}
		for _, id := range []string{"w", "y", "x"} {
			e.retry(byID[id], store.RetryParams{})
		}
		e.requireOrder([]string{"w", "y", "x"}, ids(e.claimAll(time.Minute)), "the order of the Retries")
	}},
	{"DueAreHandedOutWhateverHeld", func(e *env) {
		due := e.past()
		for _, id := range seqIDs("h", 6) {
			e.enqueue(msg(id, due))
		}
		// requireClaimed checks each deadline: due ones last Lease,
		// whatever their place.
		c := e.claim(claimArgs{Limit: 6, Held: 4, Lease: time.Minute, HeldLease: time.Second})
		require.Len(e.t, c.Leases, 6)
		for _, l := range c.Leases {
			require.False(e.t, l.Ahead, "%s: due by now, so handed out by the claim, even beyond Limit-Held", l.ID)
			_, err := e.s.Cancel(e.ctx, l.ID)
			require.ErrorIs(e.t, err, store.ErrInFlight, "%s: handed out by the claim", l.ID)
			e.ack(l)
		}
		e.requireCounts(0, 0, 0)
	}},
	{"HeldWaitForConfirm", func(e *env) {
		e.enqueue(msg("d0", e.past()), msg("d1", e.past()))
		later := e.now().Add(aheadOf)
		for _, id := range seqIDs("h", 4) {
			e.enqueue(store.Message{ID: id, Payload: []byte("v1"), Due: later})
		}
		c := e.claim(claimArgs{Limit: 6, Held: 4, Lease: time.Minute, Ahead: time.Minute})
		require.Len(e.t, c.Leases, 6)
		var handed, held []store.Lease
		for _, l := range c.Leases {
			if l.Ahead {
				held = append(held, l)
			} else {
				handed = append(handed, l)
			}
		}
		require.ElementsMatch(e.t, []string{"d0", "d1"}, ids(handed), "the due ones handed out by the claim")
		require.Len(e.t, held, 4, "those due later held")
		for _, l := range handed {
			e.ack(l)
		}
		require.True(e.t, e.cancel(held[0].ID), "a held message no consumer was handed is cancelled")
		require.ErrorIs(e.t, e.s.Confirm(e.ctx, store.ConfirmParams{Lease: held[0].Ref()}), store.ErrLeaseLost)

		e.enqueue(store.Message{ID: held[1].ID, Payload: []byte("v2"), Due: e.past()})
		require.ErrorIs(e.t, e.s.Confirm(e.ctx, store.ConfirmParams{Lease: held[1].Ref()}), store.ErrLeaseLost,
			"the replaced version is never handed out")
		for _, l := range held[2:] {
			require.NoError(e.t, e.s.Confirm(e.ctx, store.ConfirmParams{Lease: l.Ref()}))
			_, err := e.s.Cancel(e.ctx, l.ID)
			require.ErrorIs(e.t, err, store.ErrInFlight, "%s: confirmed, so handed out", l.ID)
			e.ack(l)
		}
		ls := e.claimAll(time.Minute)
		require.Len(e.t, ls, 1)
		require.Equal(e.t, held[1].ID, ls[0].ID)
		require.Equal(e.t, "v2", string(ls[0].Payload))
		e.ack(ls[0])
		e.requireCounts(0, 0, 0)
	}},
	{"HeldLeaseForTheHeld", func(e *env) {
		for _, id := range seqIDs("d", 3) {
			e.enqueue(msg(id, e.past()))
		}
		later := e.now().Add(e.soon())
		for _, id := range seqIDs("h", 2) {
			e.enqueue(msg(id, later))
		}
		// requireClaimed checks each deadline: the leases claimed ahead
		// beyond the first Limit-Held last HeldLease, the others Lease,
		// the due ones beyond Limit-Held too.
		c := e.claim(claimArgs{Limit: 5, Held: 3, Lease: time.Hour, HeldLease: 2 * time.Second, Ahead: time.Minute})
		require.Len(e.t, c.Leases, 5)
		sharded := e.sharded()
		for _, l := range c.Leases {
			require.Equal(e.t, strings.HasPrefix(l.ID, "h"), l.Ahead, "%s: claimed ahead if due later", l.ID)
		}
		x := e.expired(10)
		require.Empty(e.t, x.Leases, "nothing expired yet")
		e.waitPast(e.now().Add(e.soon() + 2*time.Second))
		x = e.expired(10)
		var expired []string
		for _, l := range x.Leases {
			require.True(e.t, l.Held, "%s: held and never confirmed", l.ID)
			expired = append(expired, l.ID)
		}
		if sharded {
			// Held beyond its shard's share only (see store.ShardedOrder).
			require.Subset(e.t, seqIDs("h", 2), expired, "only held leases expire after HeldLease")
			return
		}
		require.ElementsMatch(e.t, seqIDs("h", 2), expired, "the held leases expire after HeldLease, the others do not")
	}},
	{"HeldOnlyBeyondTheFirstLimitMinusHeld", func(e *env) {
		later := e.now().Add(e.soon())
		ids := seqIDs("h", 4)
		for _, id := range ids {
			e.enqueue(msg(id, later))
		}
		// Four claimed ahead, Limit 4, Held 2: the first two are for
		// receivers waiting now, on Lease; the last two held, on
		// HeldLease (requireClaimed checks each deadline).
		c := e.claim(claimArgs{Limit: 4, Held: 2, Lease: time.Hour, HeldLease: 2 * time.Second, Ahead: time.Minute})
		require.Len(e.t, c.Leases, 4)
		for _, l := range c.Leases {
			require.True(e.t, l.Ahead, "%s: claimed ahead", l.ID)
		}
		e.waitPast(later.Add(2 * time.Second))
		var expired []string
		for _, l := range e.expired(10).Leases {
			expired = append(expired, l.ID)
		}
		if e.sharded() {
			// Held beyond its shard's share only (see store.ShardedOrder).
			require.Subset(e.t, ids, expired)
			require.LessOrEqual(e.t, len(expired), 2, "at most the last Held are held")
			return
		}
		require.ElementsMatch(e.t, ids[2:], expired, "the last two held and expired after HeldLease; the first two on Lease")
	}},
	{"HeldCountFromLimitNotFromWhatWasFound", func(e *env) {
		later := e.now().Add(e.soon())
		for _, id := range seqIDs("h", 2) {
			e.enqueue(msg(id, later))
		}
		// Limit 6, Held 3: the first three places are for receivers
		// waiting now. The two found take two of them, on Lease, however
		// few the claim found.
		c := e.claim(claimArgs{Limit: 6, Held: 3, Lease: time.Hour, HeldLease: 2 * time.Second, Ahead: time.Minute})
		require.Len(e.t, c.Leases, 2)
		e.waitPast(later.Add(2 * time.Second))
		require.Empty(e.t, e.expired(10).Leases, "within the first Limit-Held: on Lease, none held")
	}},
	{"DueSoonCountsWhatIsLeft", func(e *env) {
		n := e.now()
		e.enqueue(msg("soon1", n.Add(-time.Second)), msg("soon2", n.Add(aheadOf)), msg("soon3", n.Add(aheadOf)),
			msg("later", n.Add(time.Hour)))
		c := e.claim(claimArgs{Limit: 1, Lease: time.Minute, Ahead: time.Minute})
		require.Len(e.t, c.Leases, 1)
		// DueSoon may be zero: a store that does not count.
		if c.DueSoon != 0 {
			require.Equal(e.t, 2, c.DueSoon, "two more due within the minute; the one due in an hour is not counted")
		}
		c = e.claim(claimArgs{Limit: 2, Lease: time.Minute, Ahead: time.Minute})
		require.Len(e.t, c.Leases, 2)
		require.Zero(e.t, c.DueSoon, "none left within the horizon")
	}},
	{"NextDueAndNextDeadline", func(e *env) {
		n := e.now()
		e.enqueue(msg("a", n.Add(-time.Second)), msg("b", n.Add(time.Hour)), msg("c", n.Add(2*time.Hour)))
		c := e.claim(claimArgs{Limit: 1, Lease: time.Minute})
		require.Len(e.t, c.Leases, 1)
		la := c.Leases[0]
		e.requireInstant(n.Add(time.Hour), c.NextDue, "NextDue: the earliest still pending")
		e.requireInstant(la.Deadline, c.NextDeadline, "NextDeadline: the lease just made")
		c = e.claim(claimArgs{Limit: 1, Lease: time.Minute})
		require.Empty(e.t, c.Leases)
		e.requireInstant(n.Add(time.Hour), c.NextDue, "NextDue of an empty claim")
		e.requireInstant(e.get("a").Deadline, c.NextDeadline, "NextDeadline of an empty claim")
		e.requireInstant(n.Add(time.Hour), e.stats().NextDue, "Stats.NextDue")
		e.ack(la)
		require.True(e.t, e.cancel("b"))
		require.True(e.t, e.cancel("c"))
		c = e.claim(claimArgs{Limit: 1, Lease: time.Minute})
		require.True(e.t, c.NextDue.IsZero(), "none pending")
		require.True(e.t, c.NextDeadline.IsZero(), "none in flight")
	}},
	{"ConcurrentClaimersWithAHorizonNeverShare", func(e *env) {
		e.claimRace([]*env{e})
	}},
	{"ConcurrentClaimersNeverShare", func(e *env) {
		const n, claimers = 1000, 8
		due := e.past()
		var msgs []store.Message
		for _, id := range seqIDs("m", n) {
			msgs = append(msgs, msg(id, due))
		}
		e.enqueue(msgs...)
		var (
			mu  sync.Mutex
			got = map[string]int{}
			wg  sync.WaitGroup
		)
		for range claimers {
			wg.Go(func() {
				for {
					c, err := e.tryClaim(claimArgs{Limit: 1 + rand.IntN(20), Lease: time.Hour})
					if !assert.NoError(e.t, err) || len(c.Leases) == 0 {
						return
					}
					mu.Lock()
					for _, l := range c.Leases {
						got[l.ID]++
						assert.Equal(e.t, 1, l.Attempt, l.ID)
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		require.Len(e.t, got, n, "every message claimed")
		for id, k := range got {
			require.Equal(e.t, 1, k, "%s claimed %d times", id, k)
		}
		e.requireCounts(0, n, 0)
	}},
}

var confirmRules = []rule{
	{"ByMovesTheDeadline", func(e *env) {
		later := e.now().Add(e.soon())
		c := store.Claimed{Leases: e.claimHeld(time.Second, time.Second, msg("a", later), msg("b", later))}
		var err error
		before, after := e.around(func() {
			err = e.s.Confirm(e.ctx, store.ConfirmParams{Lease: c.Leases[0].Ref(), By: time.Hour})
		})
		require.NoError(e.t, err)
		require.NoError(e.t, e.s.Confirm(e.ctx, store.ConfirmParams{Lease: c.Leases[1].Ref()}), "By 0 keeps the deadline")
		info := e.get(c.Leases[0].ID)
		e.requireBetween(info.Deadline, before.Add(time.Hour), after.Add(time.Hour), "the deadline By after the confirmation")
		e.requireInstant(c.Leases[1].Deadline, e.get(c.Leases[1].ID).Deadline, "the deadline of a confirmation without By")
		e.waitPast(c.Leases[1].Deadline)
		x := e.expired(10)
		require.Equal(e.t, []string{c.Leases[1].ID}, func() (out []string) {
			for _, l := range x.Leases {
				out = append(out, l.ID)
			}
			return out
		}(), "only the lease whose confirmation kept its deadline expired")
		require.False(e.t, x.Leases[0].Held, "confirmed: handed out")
	}},
	{"ByOfALostLeaseChangesNothing", func(e *env) {
		held := e.claimHeld(time.Minute, time.Second, msg("a", e.now().Add(aheadOf)))[0]
		e.enqueue(msg("a", e.now().Add(time.Hour)))
		before := e.get("a")
		require.ErrorIs(e.t, e.s.Confirm(e.ctx, store.ConfirmParams{Lease: held.Ref(), By: time.Hour}), store.ErrLeaseLost)
		require.Equal(e.t, utc(before), utc(e.get("a")), "the new version, untouched")
	}},
	{"HandsOutALeaseClaimedAhead", func(e *env) {
		l := e.claimAhead("a", "v1")
		require.NoError(e.t, e.s.Confirm(e.ctx, store.ConfirmParams{Lease: store.LeaseRef{ID: "a", Token: l.Token}}))
		require.NoError(e.t, e.s.Confirm(e.ctx, store.ConfirmParams{Lease: store.LeaseRef{ID: "a", Token: l.Token}}), "confirming again is harmless")
		found, err := e.s.Cancel(e.ctx, "a")
		require.ErrorIs(e.t, err, store.ErrInFlight, "handed out: no longer cancelled")
		require.False(e.t, found)
		e.ack(l)
		e.requireCounts(0, 0, 0)
	}},
	{"ReplacedIsNeverHandedOut", func(e *env) {
		old := e.claimAhead("a", "v1")
		l := e.claimAhead("a", "v2")
		require.ErrorIs(e.t, e.s.Confirm(e.ctx, store.ConfirmParams{Lease: store.LeaseRef{ID: "a", Token: old.Token}}), store.ErrLeaseLost, "the replaced version")
		require.Equal(e.t, "v2", string(l.Payload))
		require.Equal(e.t, 1, l.Attempt, "the new version starts at attempt 1")
		require.NoError(e.t, e.s.Confirm(e.ctx, store.ConfirmParams{Lease: store.LeaseRef{ID: "a", Token: l.Token}}))
		e.ack(l)
	}},
	{"ReleasedFails", func(e *env) {
		l := e.claimAhead("a", "v1")
		e.retry(l, store.RetryParams{})
		require.ErrorIs(e.t, e.s.Confirm(e.ctx, store.ConfirmParams{Lease: store.LeaseRef{ID: "a", Token: l.Token}}), store.ErrLeaseLost)
		require.True(e.t, e.cancel("a"), "pending again")
	}},
	{"ACurrentLeaseConfirms", func(e *env) {
		e.enqueue(msg("a", e.past()))
		l := e.claimOne("a", time.Minute)
		require.NoError(e.t, e.s.Confirm(e.ctx, store.ConfirmParams{Lease: store.LeaseRef{ID: "a", Token: l.Token}}), "handed out by the claim, and current")
		e.ack(l)
		require.ErrorIs(e.t, e.s.Confirm(e.ctx, store.ConfirmParams{Lease: store.LeaseRef{ID: "a", Token: l.Token}}), store.ErrLeaseLost, "acked")
		require.ErrorIs(e.t, e.s.Confirm(e.ctx, store.ConfirmParams{Lease: store.LeaseRef{ID: "nothing", Token: 1}}), store.ErrLeaseLost, "no such message")
	}},
	{"ExactlyOneOfConfirmAndCancel", func(e *env) {
		confirmed, cancelled := 0, 0
		for i := range 200 {
			id := fmt.Sprintf("race%d", i)
			l := e.claimAhead(id, "v")
			var (
				confirmErr, cancelErr error
				found                 bool
			)
			race(func() {
				confirmErr = e.s.Confirm(e.ctx, store.ConfirmParams{Lease: store.LeaseRef{ID: id, Token: l.Token}})
			},
				func() { found, cancelErr = e.s.Cancel(e.ctx, id) })
			switch {
			case confirmErr == nil:
				require.ErrorIs(e.t, cancelErr, store.ErrInFlight, "%s: confirmed, then cancelled", id)
				require.False(e.t, found)
				e.ack(l)
				confirmed++
			case errors.Is(confirmErr, store.ErrLeaseLost):
				require.NoError(e.t, cancelErr, "%s: neither won", id)
				require.True(e.t, found, "%s: neither won", id)
				cancelled++
			default:
				require.NoError(e.t, confirmErr)
			}
		}
		e.requireCounts(0, 0, 0)
		e.t.Logf("%d confirmed first, %d cancelled first", confirmed, cancelled)
	}},
	{"ConfirmRacingAnEnqueue", func(e *env) {
		// Which of the two came first cannot be seen afterwards: a
		// Confirm that won was followed by the replacement. What can be
		// seen is that both end the same way, whatever the race.
		confirmed, replaced := 0, 0
		for i := range 100 {
			id := fmt.Sprintf("race%d", i)
			l := e.claimAhead(id, "v1")
			var confirmErr, enqueueErr error
			race(func() {
				confirmErr = e.s.Confirm(e.ctx, store.ConfirmParams{Lease: store.LeaseRef{ID: id, Token: l.Token}})
			},
				func() {
					enqueueErr = e.s.Enqueue(e.ctx, []store.Message{{ID: id, Payload: []byte("v2"), Due: e.now().Add(time.Hour)}})
				})
			require.NoError(e.t, enqueueErr)
			// Either way the new version is pending and the old lease is
			// gone: confirmed, it was handed out and then replaced.
			info := e.get(id)
			require.Equal(e.t, store.Pending, info.State, id)
			require.Equal(e.t, "v2", string(info.Payload), id)
			require.ErrorIs(e.t, e.s.Ack(e.ctx, store.LeaseRef{ID: id, Token: l.Token}), store.ErrLeaseLost, id)
			switch {
			case confirmErr == nil:
				confirmed++
			case errors.Is(confirmErr, store.ErrLeaseLost):
				replaced++
			default:
				require.NoError(e.t, confirmErr)
			}
			require.True(e.t, e.cancel(id))
		}
		e.t.Logf("%d confirmed first, %d replaced first", confirmed, replaced)
		require.Equal(e.t, 100, confirmed+replaced)
	}},
}

// race runs a and b at once, each on a goroutine released at the same
// moment, and returns when both have.
func race(a, b func()) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	wg.Go(func() { <-start; a() })
	wg.Go(func() { <-start; b() })
	close(start)
	wg.Wait()
}

// sortedBy reports whether infos are in order of the instant at gives.
func sortedBy(infos []store.Info, at func(store.Info) time.Time) bool {
	return slices.IsSortedFunc(infos, func(a, b store.Info) int { return at(a).Compare(at(b)) })
}
