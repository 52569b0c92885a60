package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// The rules that race a store's calls against each other. Their
// goroutines never call the test: they record what they saw, and the
// rule checks it once they have all returned.

// requireNeverEarly checks, on the real clock, that no message is handed
// out before its due time by the store's own clock: messages due a few
// milliseconds after the store's now are claimed by a loop that does not
// sleep, so that claims fall in the last millisecond before each due time,
// and every claim that hands one out must report a Now (the store's clock
// when it claimed, or later) at or after the due time. A store 1 ms early
// hands one out with a Now before it.
func (e *env) requireNeverEarly() {
	e.t.Helper()
	const n = 5
	base := e.storeNow().Add(20 * time.Millisecond)
	var want []string
	for i := range n {
		id := fmt.Sprintf("soon%d", i)
		e.enqueue(msg(id, base.Add(time.Duration(i)*3*time.Millisecond)))
		want = append(want, id)
	}
	// Sleep until a few milliseconds before the first is due (on this
	// machine's clock, which the store's is or follows), then spin.
	time.Sleep(time.Until(base) - 3*time.Millisecond)
	deadline := time.Now().Add(maxWait)
	var got []string
	for len(got) < n {
		require.True(e.t, time.Now().Before(deadline), "not all claimed %v after they were due: %v", maxWait, got)
		c := e.claim(claimArgs{Limit: n, Lease: time.Minute}) // checks Now >= Due of each handed out
		for _, l := range c.Leases {
			require.False(e.t, l.Ahead)
			got = append(got, l.ID)
		}
	}
	e.requireOrder(want, got, "earliest first")
}

// A claimRecord is one lease a racing claimer got.
type claimRecord struct {
	store.Lease
	now time.Time // the claim's Now
}

// claimRace has claimers on each of handles (handles of one backend)
// claim with a horizon and a short lease while a reaper gives back the
// leases that expire, until every message is acked: the race that a
// horizon of zero and a long lease hide. A message may be leased again
// only after its lease expired: for each message, by token, the attempts
// go 1, 2, 3 and each claim's Now is at or after the deadline of the
// lease before.
func (e *env) claimRace(handles []*env) {
	e.t.Helper()
	const n = 300
	ahead, lease := 50*time.Millisecond, 2*time.Millisecond
	now := e.now()
	var msgs []store.Message
	for i, id := range seqIDs("m", n) {
		due := now.Add(-time.Second)
		if i%3 != 0 {
			due = now.Add(ahead * time.Duration(i) / n)
		}
		msgs = append(msgs, msg(id, due))
	}
	e.enqueue(msgs...)

	var (
		mu      sync.Mutex
		records []claimRecord
		errs    []error
		acked   atomic.Int64
		wg      sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	stop := time.Now().Add(maxWait)
	done := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return acked.Load() == n || len(errs) > 0 || time.Now().After(stop)
	}
	for _, h := range handles {
		for range 4 {
			wg.Go(func() {
				for !done() {
					c, err := h.s.Claim(h.ctx, claimArgs{Limit: 1 + rand.IntN(10), Lease: lease, Ahead: ahead})
					if err != nil {
						fail(fmt.Errorf("claim: %w", err))
						return
					}
					if len(c.Leases) == 0 {
						time.Sleep(50 * time.Microsecond) // let the reaper in
						continue
					}
					mu.Lock()
					for _, l := range c.Leases {
						records = append(records, claimRecord{l, c.Now})
					}
					mu.Unlock()
					for _, l := range c.Leases {
						if rand.IntN(2) == 0 {
							continue // left to expire
						}
						switch err := h.s.Ack(h.ctx, l.Ref()); {
						case err == nil:
							acked.Add(1)
						case !errors.Is(err, store.ErrLeaseLost):
							fail(fmt.Errorf("ack: %w", err))
						}
					}
				}
			})
		}
	}
	wg.Go(func() { // the reaper
		for !done() {
			x, err := e.s.Expired(e.ctx, 50)
			if err != nil {
				fail(fmt.Errorf("expired: %w", err))
				return
			}
			for _, l := range x.Leases {
				err := e.s.Retry(e.ctx, store.RetryParams{Lease: l.Ref(), Expired: true, Error: leaseExpired})
				if err != nil && !errors.Is(err, store.ErrLeaseLost) {
					fail(fmt.Errorf("retry: %w", err))
				}
			}
			if e.mock {
				e.advance(time.Millisecond)
			} else {
				time.Sleep(time.Millisecond)
			}
		}
	})
	wg.Wait()
	require.Empty(e.t, errs)
	require.EqualValues(e.t, n, acked.Load(), "every message acked within %v", maxWait)

	byID := map[string][]claimRecord{}
	for _, r := range records {
		byID[r.ID] = append(byID[r.ID], r)
	}
	require.Len(e.t, byID, n)
	twice := 0
	for id, rs := range byID {
		slices.SortFunc(rs, func(a, b claimRecord) int { return compareTokens(a.Token, b.Token) })
		for i, r := range rs {
			if r.Attempt != i+1 || (i > 0 && (r.Token == rs[i-1].Token || r.now.Before(rs[i-1].Deadline))) {
				twice++
				if twice <= 5 {
					e.t.Errorf("%s leased twice at once: lease %d of %v", id, i, rs)
				}
				break
			}
		}
	}
	require.Zero(e.t, twice, "messages leased twice at once, of %d (%d leases)", n, len(records))
	e.t.Logf("%d messages, %d leases", n, len(records))
}

func compareTokens(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// seriesRace has one step from the state sr per keeper (handles of one
// backend) race: exactly one applies, the others return its state, and
// only its message is written.
func (e *env) seriesRace(handles []*env, sr store.Series) {
	e.t.Helper()
	const k = 8
	type result struct {
		p   store.SeriesStep
		got store.Series
		ok  bool
		err error
	}
	results := make([]result, k)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range k {
		h := handles[i%len(handles)]
		p := e.seriesStep(sr.Name, sr.Fingerprint, sr, sr.Last.Add(time.Duration(i+1)*time.Second))
		p.Cancel = sr.Pending
		wg.Go(func() {
			<-start
			got, ok, err := h.s.(store.SeriesKeeper).AdvanceSeries(h.ctx, p)
			results[i] = result{p, got, ok, err}
		})
	}
	close(start)
	wg.Wait()
	var won []result
	for _, r := range results {
		require.NoError(e.t, r.err)
		if r.ok {
			won = append(won, r)
		}
	}
	require.Len(e.t, won, 1, "exactly one step from one state applies")
	w := won[0]
	want := store.Series{Name: sr.Name, Fingerprint: sr.Fingerprint, Last: w.p.Last, Next: w.p.Next, Pending: w.p.Message.ID}
	e.requireSeries(want, w.got, "the winner's")
	for _, r := range results {
		if !r.ok {
			e.requireSeries(want, r.got, "a refused step returns the state as it is")
			e.gone(r.p.Message.ID)
		}
	}
	e.requireSeries(want, e.stored(sr.Name), "stored")
	require.Equal(e.t, store.Pending, e.get(w.p.Message.ID).State)
	e.gone(sr.Pending)
}

// reapRace races f, a write on the expired lease l, against the reap's
// Retry of l (RetryParams.Expired) 50 times, one message each, and
// checks that exactly one wins each time, with check judging the end.
func (e *env) reapRace(name string, f func(l store.Lease) error, check func(id string, fWon bool)) {
	e.t.Helper()
	wins := [2]int{}
	for i := range 50 {
		id := fmt.Sprintf("%s%02d", name, i)
		e.enqueue(msg(id, e.past()))
		l := e.claimOne(id, time.Millisecond)
		e.waitPast(l.Deadline)
		x := e.expired(100)
		var xl *store.ExpiredLease
		for i := range x.Leases {
			if x.Leases[i].ID == id {
				xl = &x.Leases[i]
			}
		}
		require.NotNil(e.t, xl, "%s expired", id)
		var fErr, retryErr error
		race(func() { fErr = f(l) }, func() {
			// Due in an hour, so that the next message is claimed first.
			retryErr = e.s.Retry(e.ctx, store.RetryParams{Lease: xl.Ref(), Expired: true, Error: leaseExpired, After: time.Hour})
		})
		switch {
		case fErr == nil:
			require.ErrorIs(e.t, retryErr, store.ErrLeaseLost, "%s: %s won, the reap's Retry must lose", id, name)
			wins[0]++
		case errors.Is(fErr, store.ErrLeaseLost):
			require.NoError(e.t, retryErr, "%s: %s lost, so the reap won", id, name)
			wins[1]++
		default:
			require.NoError(e.t, fErr, id)
		}
		check(id, fErr == nil)
	}
	e.t.Logf("%s first %d times, the reap %d", name, wins[0], wins[1])
}
