package storetest

import (
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// The rules of a message's fields beyond its ID, payload and due time
// (Kind, MaxAttempts, Timeout): a store keeps them as they were enqueued,
// in every state, through retries, death, Requeue and a restart, and an
// Enqueue of the same ID replaces them. Expired gives each lease's
// MaxAttempts, which decides whether it was the last attempt.

// fieldsOf returns a message with every field set, the Timeout with
// nanoseconds, which every store keeps.
func fieldsOf(id string, due time.Time) store.Message {
	return store.Message{ID: id, Kind: "order.close/é", Payload: []byte("payload of " + id), Due: due,
		MaxAttempts: 7, Timeout: 1500*time.Millisecond + 7}
}

// requireFields checks that got carries the Kind, MaxAttempts and Timeout
// of want.
func (e *env) requireFields(want store.Message, kind string, maxAttempts int, timeout time.Duration, what string) {
	e.t.Helper()
	require.Equal(e.t, want.Kind, kind, "%s: Kind", what)
	require.Equal(e.t, want.MaxAttempts, maxAttempts, "%s: MaxAttempts", what)
	require.Equal(e.t, want.Timeout, timeout, "%s: Timeout", what)
}

func (e *env) requireInfoFields(want store.Message, what string) {
	e.t.Helper()
	info := e.get(want.ID)
	e.requireFields(want, info.Kind, info.MaxAttempts, info.Timeout, what+", Get")
}

var fieldRules = []rule{
	{"KeptInEveryState", func(e *env) {
		m := fieldsOf("a", e.past())
		e.enqueue(m)
		e.requireInfoFields(m, "pending")
		l := e.claimOne("a", time.Minute)
		e.requireFields(m, l.Kind, l.MaxAttempts, l.Timeout, "the lease")
		e.requireInfoFields(m, "in flight")
		ls, _, err := e.s.List(e.ctx, store.ListParams{State: store.InFlight, Limit: 10})
		require.NoError(e.t, err)
		require.Len(e.t, ls, 1)
		e.requireFields(m, ls[0].Kind, ls[0].MaxAttempts, ls[0].Timeout, "in flight, List")
		e.retry(l, store.RetryParams{Error: "boom"})
		e.requireInfoFields(m, "pending after a Retry")
		l = e.claimOne("a", time.Minute)
		e.requireFields(m, l.Kind, l.MaxAttempts, l.Timeout, "the second lease")
		e.retry(l, store.RetryParams{Dead: true, Error: "dead"})
		e.requireInfoFields(m, "dead")
		ls, _, err = e.s.List(e.ctx, store.ListParams{State: store.Dead, Limit: 10})
		require.NoError(e.t, err)
		require.Len(e.t, ls, 1)
		e.requireFields(m, ls[0].Kind, ls[0].MaxAttempts, ls[0].Timeout, "dead, List")
		require.NoError(e.t, e.s.Requeue(e.ctx, store.RequeueParams{ID: "a"}))
		e.requireInfoFields(m, "requeued")
		ls, _, err = e.s.List(e.ctx, store.ListParams{State: store.Pending, Limit: 10})
		require.NoError(e.t, err)
		require.Len(e.t, ls, 1)
		e.requireFields(m, ls[0].Kind, ls[0].MaxAttempts, ls[0].Timeout, "pending, List")
	}},
	{"KeptHeldAndAhead", func(e *env) {
		m := fieldsOf("held", e.now().Add(aheadOf))
		h := e.claimHeld(time.Minute, time.Second, m)[0]
		e.requireFields(m, h.Kind, h.MaxAttempts, h.Timeout, "a held lease")
		a := fieldsOf("ahead", e.now().Add(aheadOf))
		e.enqueue(a)
		c := e.claim(claimArgs{Limit: 1, Lease: time.Minute, Ahead: time.Minute})
		require.Len(e.t, c.Leases, 1)
		e.requireFields(a, c.Leases[0].Kind, c.Leases[0].MaxAttempts, c.Leases[0].Timeout, "a lease claimed ahead")
	}},
	{"KeptAcrossARestart", func(e *env) {
		p := fieldsOf("pending", e.now().Add(time.Hour))
		f := fieldsOf("inflight", e.past())
		d := fieldsOf("dead", e.past())
		d.Kind, d.MaxAttempts, d.Timeout = "k", 1, time.Nanosecond
		e.enqueue(p, f, d)
		c := e.claim(claimArgs{Limit: 2, Lease: time.Hour})
		e.requireOrder([]string{"inflight", "dead"}, ids(c.Leases), "claimed")
		for _, l := range c.Leases {
			if l.ID == "dead" {
				e.retry(l, store.RetryParams{Dead: true})
			}
		}
		e.reopen()
		e.requireInfoFields(p, "pending, after the restart")
		e.requireInfoFields(f, "in flight, after the restart")
		e.requireInfoFields(d, "dead, after the restart")
	}},
	{"ExpiredCarriesMaxAttempts", func(e *env) {
		m := fieldsOf("a", e.past())
		e.enqueue(m, msg("b", e.past()))
		c := e.claim(claimArgs{Limit: 2, Lease: time.Second})
		require.Len(e.t, c.Leases, 2)
		e.waitPast(c.Leases[1].Deadline)
		x := e.expired(10)
		got := map[string]int{}
		for _, l := range x.Leases {
			got[l.ID] = l.MaxAttempts
		}
		require.Equal(e.t, map[string]int{"a": m.MaxAttempts, "b": 0}, got, "each expired lease with its message's MaxAttempts")
	}},
	{"EnqueueReplacesThem", func(e *env) {
		e.enqueue(fieldsOf("a", e.now().Add(time.Hour)))
		plain := msg("a", e.now().Add(time.Hour))
		e.enqueue(plain)
		e.requireInfoFields(plain, "replaced by a message without them")
		m := fieldsOf("a", e.past())
		m.Kind, m.MaxAttempts, m.Timeout = "other", 2, time.Minute
		e.enqueue(m)
		e.requireInfoFields(m, "replaced again")
	}},
}
