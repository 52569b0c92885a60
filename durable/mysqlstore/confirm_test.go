package mysqlstore

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/seed64e23a5c/timingwheel/internal/coalesce"
)

// claimHeld enqueues the messages ids, the first due an hour ago and the
// others in an hour, and claims them all, the first handed out and the
// others held (claimed ahead), on leases of a minute.
func claimHeld(t *testing.T, s *Store, ids ...string) map[string]store.Lease {
	t.Helper()
	var msgs []store.Message
	for i, id := range ids {
		due := time.Now().Add(time.Hour)
		if i == 0 {
			due = time.Now().Add(-time.Hour)
		}
		msgs = append(msgs, store.Message{ID: id, Due: due})
	}
	require.NoError(t, s.Enqueue(ctx, msgs))
	c, err := s.Claim(ctx, store.ClaimParams{Limit: len(ids), Held: len(ids) - 1, Lease: time.Minute, Ahead: 2 * time.Hour})
	require.NoError(t, err)
	require.Len(t, c.Leases, len(ids))
	out := map[string]store.Lease{}
	for _, l := range c.Leases {
		out[l.ID] = l
	}
	return out
}

// deadline returns the deadline of the in-flight message id.
func deadline(t *testing.T, s *Store, id string) time.Time {
	t.Helper()
	info, err := s.Get(ctx, id)
	require.NoError(t, err)
	require.Equal(t, store.InFlight, info.State, id)
	return info.Deadline
}

// A batch of confirmations carries each one's By: the statement that
// confirms them moves the deadline of those with a By, to their own By,
// and keeps the others', held or handed out; a lost lease, an ack and a
// held lease of a paused queue in the same batch get their own outcomes.
func TestConfirmByInABatch(t *testing.T) {
	s := newStore(t)
	ls := claimHeld(t, s, "a-handed", "b-hour", "c-none", "d-two-hours", "e-acked", "f-lost")
	require.False(t, ls["a-handed"].Ahead, "handed out by the claim")
	call := func(l store.Lease, confirm bool, by time.Duration) *coalesce.Call[leaseCall] {
		return &coalesce.Call[leaseCall]{Ctx: ctx, Arg: leaseCall{LeaseRef: l.Ref(), confirm: confirm, by: micros(by)}}
	}
	lost := ls["f-lost"]
	lost.Token++
	batch := []*coalesce.Call[leaseCall]{
		call(ls["d-two-hours"], true, 2*time.Hour),
		call(ls["a-handed"], true, 3*time.Hour), // handed out already: only its deadline moves
		call(ls["b-hour"], true, time.Hour),
		call(ls["c-none"], true, 0),
		call(ls["e-acked"], false, 0),
		call(lost, true, time.Hour),
	}
	before := dbNow(t)
	s.sendLeases(batch)
	after := dbNow(t)
	errs := map[string]error{}
	for _, c := range batch {
		errs[c.Arg.ID] = c.Err
	}
	require.Equal(t, map[string]error{"a-handed": nil, "b-hour": nil, "c-none": nil, "d-two-hours": nil,
		"e-acked": nil, "f-lost": store.ErrLeaseLost}, errs)

	for id, by := range map[string]time.Duration{"a-handed": 3 * time.Hour, "b-hour": time.Hour, "d-two-hours": 2 * time.Hour} {
		d := deadline(t, s, id)
		require.False(t, d.Before(before.Add(by)), "%s: deadline %v, want By %v after the batch (from %v)", id, d, by, before)
		require.False(t, d.After(after.Add(by)), "%s: deadline %v, want By %v after the batch (to %v)", id, d, by, after)
	}
	require.Equal(t, ls["c-none"].Deadline, deadline(t, s, "c-none"), "no By: the deadline kept")
	require.Equal(t, ls["f-lost"].Deadline, deadline(t, s, "f-lost"), "a lost lease changes nothing")
	_, err := s.Get(ctx, "e-acked")
	require.ErrorIs(t, err, store.ErrNotFound, "acked in the same batch")
	for _, id := range []string{"b-hour", "c-none", "d-two-hours"} {
		_, err := s.Cancel(ctx, id)
		require.ErrorIs(t, err, store.ErrInFlight, "%s: confirmed, so handed out", id)
	}

	// Paused: a held lease's confirmation is refused, its By with it; a
	// lease handed out already still moves.
	ls = claimHeld(t, s, "g-handed", "h-held")
	require.NoError(t, s.SetPaused(ctx, true))
	batch = []*coalesce.Call[leaseCall]{call(ls["g-handed"], true, time.Hour), call(ls["h-held"], true, time.Hour)}
	before = dbNow(t)
	s.sendLeases(batch)
	require.NoError(t, batch[0].Err)
	require.ErrorIs(t, batch[1].Err, store.ErrPaused)
	require.False(t, deadline(t, s, "g-handed").Before(before.Add(time.Hour)), "handed out: moved while paused")
	require.Equal(t, ls["h-held"].Deadline, deadline(t, s, "h-held"), "refused: unchanged")
	require.NoError(t, s.SetPaused(ctx, false))
}

// A lone Confirm with By of a lease its claim handed out (not held)
// moves its deadline too; without By it changes nothing; of a held lease
// of a paused queue it is refused and changes nothing.
func TestConfirmByOfAHandedOutLease(t *testing.T) {
	s := newStore(t)
	ls := claimHeld(t, s, "a", "b")
	a, b := ls["a"], ls["b"]
	before := dbNow(t)
	require.NoError(t, s.Confirm(ctx, store.ConfirmParams{Lease: a.Ref(), By: time.Hour}))
	require.False(t, deadline(t, s, "a").Before(before.Add(time.Hour)), "moved")
	d := deadline(t, s, "a")
	require.NoError(t, s.Confirm(ctx, store.ConfirmParams{Lease: a.Ref()}), "confirmed again, without By")
	require.Equal(t, d, deadline(t, s, "a"), "kept")

	require.NoError(t, s.SetPaused(ctx, true))
	require.ErrorIs(t, s.Confirm(ctx, store.ConfirmParams{Lease: b.Ref(), By: time.Hour}), store.ErrPaused)
	require.Equal(t, ls["b"].Deadline, deadline(t, s, "b"), "refused: unchanged")
	require.NoError(t, s.SetPaused(ctx, false))
	require.NoError(t, s.Confirm(ctx, store.ConfirmParams{Lease: b.Ref(), By: 2 * time.Hour}))
	require.False(t, deadline(t, s, "b").Before(before.Add(2*time.Hour)), "moved once resumed")
}

// The batch's confirmation finds each row by its primary key.
func TestConfirmBatchPlan(t *testing.T) {
	s := newStore(t)
	var msgs []store.Message
	for i := range 2000 {
		msgs = append(msgs, store.Message{ID: fmt.Sprintf("m%05d", i)})
	}
	require.NoError(t, s.Enqueue(ctx, msgs))
	_, err := testDBHandle(t).ExecContext(context.Background(), expand("ANALYZE TABLE {T}"))
	require.NoError(t, err)
	unhold := strings.Replace(unholdSQL, "%s", "SELECT ? AS id, ? AS by_us, ? AS place UNION ALL SELECT ?, ?, ?", 1)
	plan, keys, _ := explain(t, unhold, "m00010", 1000, 0, "m00011", 0, 1, s.queue)
	t.Logf("EXPLAIN of the batch's confirmation:\n%s", strings.Join(plan, "\n"))
	requireUpdateByPrimaryKey(t, plan, keys)
}
