package storetest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/stretchr/testify/require"
)

var enqueueRules = []rule{
	{"ReplacesPending", func(e *env) {
		due := e.past()
		before, after := e.around(func() { e.enqueue(store.Message{ID: "a", Payload: []byte("v1"), Due: due}) })
		first := e.get("a").EnqueuedAt
		e.requireBetween(first, before, after, "EnqueuedAt of a new message")
		e.advance(time.Millisecond) // so that a new EnqueuedAt would differ
		e.enqueue(store.Message{ID: "a", Payload: []byte("v2"), Due: due.Add(time.Millisecond)})
		require.Equal(e.t, utc(store.Info{ID: "a", Payload: []byte("v2"), State: store.Pending,
			Due: due.Add(time.Millisecond), EnqueuedAt: first}), utc(e.get("a")),
			"the new payload and due time; EnqueuedAt kept")
		e.requireCounts(1, 0, 0)
		ls := e.claimAll(time.Minute)
		require.Len(e.t, ls, 1, "the old version is never delivered")
		require.Equal(e.t, "v2", string(ls[0].Payload))
	}},
	{"ReplacesInFlight", func(e *env) {
		e.enqueue(store.Message{ID: "a", Payload: []byte("v1"), Due: e.past()})
		first := e.get("a").EnqueuedAt
		e.retry(e.claimOne("a", time.Minute), store.RetryParams{Error: "boom"})
		l := e.claimOne("a", time.Minute)
		require.Equal(e.t, 2, l.Attempt)
		e.advance(time.Millisecond) // so that a new EnqueuedAt would differ
		e.enqueue(store.Message{ID: "a", Payload: []byte("v2"), Due: e.past()})
		require.Equal(e.t, utc(store.Info{ID: "a", Payload: []byte("v2"), State: store.Pending,
			Due: e.get("a").Due, EnqueuedAt: first}), utc(e.get("a")),
			"pending again, attempts from zero, LastError cleared, EnqueuedAt kept")
		e.requireLost(l, "on the replaced version")
		l2 := e.claimOne("a", time.Minute)
		require.Equal(e.t, "v2", string(l2.Payload))
		require.Equal(e.t, 1, l2.Attempt)
		require.Empty(e.t, l2.LastError)
		e.ack(l2)
		e.requireCounts(0, 0, 0)
	}},
	{"ReplacesDead", func(e *env) {
		e.kill("a")
		first := e.get("a").EnqueuedAt
		e.advance(time.Millisecond)
		e.enqueue(store.Message{ID: "a", Payload: []byte("v2"), Due: e.past()})
		info := e.get("a")
		require.Equal(e.t, utc(store.Info{ID: "a", Payload: []byte("v2"), State: store.Pending,
			Due: info.Due, EnqueuedAt: first}), utc(info))
		dl, err := e.deadLetters(10)
		require.NoError(e.t, err)
		require.Empty(e.t, dl)
		e.requireCounts(1, 0, 0)
	}},
	{"ZeroDueIsNow", func(e *env) {
		before, after := e.around(func() { e.enqueue(msg("a", time.Time{})) })
		info := e.get("a")
		e.requireBetween(info.Due, before, after, "the Due of a zero Due")
		e.requireInstant(info.Due, e.stats().NextDue, "Stats.NextDue")
		require.Len(e.t, e.claimAll(time.Minute), 1, "due now")
	}},
	{"DuplicateIDsLaterWins", func(e *env) {
		// The Store doc does not say; both stores of the module write
		// such a batch as two Enqueues would.
		due := e.past()
		e.enqueue(store.Message{ID: "a", Payload: []byte("v1"), Due: due}, msg("b", due),
			store.Message{ID: "a", Payload: []byte("v2"), Due: due})
		e.requireCounts(2, 0, 0)
		require.Equal(e.t, "v2", string(e.get("a").Payload))
		ls := e.claimAll(time.Minute)
		require.ElementsMatch(e.t, []string{"a", "b"}, ids(ls))
	}},
	{"ConcurrentCallsEachWhole", func(e *env) {
		// Calls made at the same time, some of them writing the same IDs
		// (a store may send them together): each call is written whole,
		// and each ID holds one message, from one of the calls that wrote
		// it.
		const callers, shared = 50, 5
		due := e.past()
		errs := make([]error, callers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for g := range callers {
			wg.Go(func() {
				<-start
				p := []byte(strconv.Itoa(g))
				errs[g] = e.s.Enqueue(e.ctx, []store.Message{
					{ID: fmt.Sprintf("own%02d", g), Payload: p, Due: due},
					{ID: fmt.Sprintf("shared%d", g%shared), Payload: p, Due: due},
				})
			})
		}
		close(start)
		wg.Wait()
		for g, err := range errs {
			require.NoError(e.t, err, "call %d", g)
		}
		e.requireCounts(callers+shared, 0, 0)
		for i := range shared {
			g, err := strconv.Atoi(string(e.get(fmt.Sprintf("shared%d", i)).Payload))
			require.NoError(e.t, err)
			require.Equal(e.t, i, g%shared, "shared%d holds the payload of a call that wrote it", i)
		}
		require.Len(e.t, e.claimAll(time.Minute), callers+shared, "one message an ID")
	}},
	{"InvalidBatchWritesNothing", func(e *env) {
		e.enqueue(store.Message{ID: "kept", Payload: []byte("v0"), Due: e.past()})
		for name, bad := range map[string]store.Message{
			"empty ID":     {ID: ""},
			"long ID":      {ID: strings.Repeat("x", store.MaxIDLen+1)},
			"long payload": {ID: "big", Payload: make([]byte, store.MaxPayloadLen+1)},
		} {
			err := e.s.Enqueue(e.ctx, []store.Message{msg("new", time.Time{}),
				{ID: "kept", Payload: []byte("v1")}, bad, msg("new2", time.Time{})})
			require.ErrorIs(e.t, err, store.ErrInvalidMessage, name)
			e.requireCounts(1, 0, 0)
			e.requireNotFound("new")
			e.requireNotFound("new2")
			require.Equal(e.t, "v0", string(e.get("kept").Payload), "%s: not replaced", name)
		}
		// The limits themselves are fine.
		e.enqueue(store.Message{ID: strings.Repeat("x", store.MaxIDLen), Payload: make([]byte, store.MaxPayloadLen), Due: e.past()})
		ls := e.claimAll(time.Minute)
		require.Len(e.t, ls, 2)
		for _, l := range ls {
			if l.ID != "kept" {
				require.Len(e.t, l.Payload, store.MaxPayloadLen)
			}
		}
	}},
	largeBatchRule,
}

// enqueueLargeBatch is a batch larger than any store writes in one
// command (Redis: 1000 messages or 4 MiB a script; PostgreSQL: 1000 rows
// a statement): 2500 messages of 2 KiB.
func enqueueLargeBatch(due time.Time) []store.Message {
	var out []store.Message
	for _, id := range seqIDs("big", 2500) {
		out = append(out, store.Message{ID: id, Payload: []byte(strings.Repeat(id, 2048/len(id))), Due: due})
	}
	return out
}

var largeBatchRule = rule{"LargeBatchAllOrNone", func(e *env) {
	batch := enqueueLargeBatch(e.past())
	bad := slices.Clone(batch)
	bad[len(bad)-1].Payload = make([]byte, store.MaxPayloadLen+1)
	require.ErrorIs(e.t, e.s.Enqueue(e.ctx, bad), store.ErrInvalidMessage, "the last message is invalid")
	e.requireCounts(0, 0, 0)
	e.requireNotFound(batch[0].ID)

	e.enqueue(batch...)
	e.requireCounts(len(batch), 0, 0)
	var want []string
	for _, m := range batch {
		want = append(want, m.ID)
	}
	ls := e.claimAll(time.Minute)
	e.requireOrder(want, ids(ls), "every message, in the batch's order")
	for i, l := range ls {
		if l.ID == batch[i].ID {
			require.Equal(e.t, string(batch[i].Payload), string(l.Payload), l.ID)
		}
	}
}}

var cancelRules = []rule{
	{"Pending", func(e *env) {
		e.enqueue(msg("a", e.now().Add(time.Hour)))
		require.True(e.t, e.cancel("a"))
		e.requireNotFound("a")
		require.False(e.t, e.cancel("a"), "gone")
		e.requireCounts(0, 0, 0)
	}},
	{"Missing", func(e *env) {
		require.False(e.t, e.cancel("nothing"))
	}},
	{"Dead", func(e *env) {
		e.kill("a")
		require.True(e.t, e.cancel("a"))
		e.requireNotFound("a")
		e.requireCounts(0, 0, 0)
	}},
	{"ClaimedAheadIsTakenBack", func(e *env) {
		l := e.claimAhead("a", "v1")
		require.True(e.t, e.cancel("a"), "a message no consumer was handed is cancelled")
		require.ErrorIs(e.t, e.s.Confirm(e.ctx, store.ConfirmParams{Lease: store.LeaseRef{ID: "a", Token: l.Token}}), store.ErrLeaseLost, "its holder must not hand it out")
		e.requireNotFound("a")
		e.requireCounts(0, 0, 0)
	}},
	{"HandedOutIsInFlight", func(e *env) {
		e.enqueue(msg("a", e.past()))
		l := e.claimOne("a", time.Minute)
		before := e.get("a")
		found, err := e.s.Cancel(e.ctx, "a")
		require.ErrorIs(e.t, err, store.ErrInFlight)
		require.False(e.t, found)
		require.Equal(e.t, utc(before), utc(e.get("a")), "nothing deleted")
		e.ack(l)
	}},
}
