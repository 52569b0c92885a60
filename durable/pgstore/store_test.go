package pgstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/seed64e23a5c/timingwheel/internal/leasetest"
)

// TestBinaryIDs: any bytes make an ID, NUL included, and the ID of a
// queue is apart from the same ID in another queue.
func TestBinaryIDs(t *testing.T) {
	pool := testPool(t)
	queue := freshQueue()
	s := openStore(t, pool, queue)
	other := openStore(t, pool, queue+"\u00e9")
	ids := []string{"a", "a\x00", "a\x00b", "\x00", "\xff\xfe", "é"}
	past := dbNow(t).Add(-time.Second)
	var msgs []durable.Message
	for _, id := range ids {
		msgs = append(msgs, durable.Message{ID: id, Payload: []byte("p" + id), Due: past})
	}
	require.NoError(t, s.Enqueue(ctx, msgs))
	require.NoError(t, other.Enqueue(ctx, []durable.Message{msg("a", past)}))
	for _, id := range ids {
		info, err := s.Get(ctx, id)
		require.NoError(t, err, "%q", id)
		assert.Equal(t, id, info.ID)
		assert.Equal(t, "p"+id, string(info.Payload))
	}
	c, err := s.Claim(ctx, store.ClaimParams{Limit: 100, Lease: time.Minute})
	require.NoError(t, err)
	var got []string
	for _, l := range c.Leases {
		got = append(got, l.ID)
		require.NoError(t, s.Ack(ctx, store.LeaseRef{ID: l.ID, Token: l.Token}))
	}
	assert.Equal(t, ids, got, "in the order of the batch")
	st, err := other.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, st.Pending, "the other queue keeps its own")
}

// TestDueRoundedUp: a due time between two microseconds is kept as the
// later one, so that the message is never claimed early.
func TestDueRoundedUp(t *testing.T) {
	s := newStore(t)
	due := dbNow(t).Add(time.Hour).Truncate(time.Microsecond).Add(500 * time.Nanosecond)
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("a", due)}))
	info, err := s.Get(ctx, "a")
	require.NoError(t, err)
	assert.True(t, info.Due.Equal(due.Truncate(time.Microsecond).Add(time.Microsecond)), "%v", info.Due)
	far := time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC)
	require.ErrorIs(t, s.Enqueue(ctx, []durable.Message{msg("far", far)}), store.ErrInvalidMessage,
		"a due time beyond the range every store keeps")
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("last", store.MaxTime)}))
	info, err = s.Get(ctx, "last")
	require.NoError(t, err)
	assert.True(t, info.Due.Equal(store.MaxTime), "the end of the range is kept: %v", info.Due)
}

// TestLargeBatch writes a batch of several statements, in one
// transaction, in order.
func TestLargeBatch(t *testing.T) {
	s := newStore(t)
	past := dbNow(t).Add(-time.Second)
	var msgs []durable.Message
	var want []string
	for i := range 2500 {
		id := fmt.Sprintf("m%05d", 2500-i)
		msgs = append(msgs, msg(id, past))
		want = append(want, id)
	}
	require.NoError(t, s.Enqueue(ctx, msgs))
	var got []string
	for {
		c, err := s.Claim(ctx, store.ClaimParams{Limit: MaxClaim + 100, Lease: time.Minute})
		require.NoError(t, err)
		require.LessOrEqual(t, len(c.Leases), MaxClaim)
		if len(c.Leases) == 0 {
			break
		}
		for _, l := range c.Leases {
			got = append(got, l.ID)
		}
	}
	assert.Equal(t, want, got)
}

// TestDeadLetterRetention: a death deletes the oldest dead letters beyond
// the count, and those older than the age.
// die enqueues a message of ID id due now to s, which holds no other
// pending, claims it and makes it dead, and returns the error of that
// Retry, which has 5 seconds.
func die(t *testing.T, s *Store, r store.Retention, id string) error {
	t.Helper()
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg(id, time.Time{})}))
	c, err := s.Claim(ctx, store.ClaimParams{Limit: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, c.Leases, 1)
	waited, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return s.Retry(waited, store.RetryParams{Lease: store.LeaseRef{ID: id, Token: c.Leases[0].Token}, Dead: true, Error: "dead", Retention: r})
}

func TestDeadLetterRetention(t *testing.T) {
	var r store.Retention
	kill := func(s *Store, id string) {
		t.Helper()
		require.NoError(t, die(t, s, r, id))
	}
	dead := func(s *Store) []string {
		t.Helper()
		return leasetest.DeadIDs(t, s)
	}

	s, r := newStore(t), store.Retention{MaxCount: 3}
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		kill(s, id)
	}
	assert.Equal(t, []string{"c", "d", "e"}, dead(s), "the newest three")

	s, r = newStore(t), store.Retention{MaxAge: 100 * time.Millisecond}
	kill(s, "old")
	time.Sleep(150 * time.Millisecond) // older than the age
	kill(s, "new")
	assert.Equal(t, []string{"new"}, dead(s))

	s, r = newStore(t), store.Retention{}
	for i := range 5 {
		kill(s, fmt.Sprint(i))
	}
	assert.Len(t, dead(s), 5, "no limit")
}

// A death that trims the dead letters skips one that another transaction
// holds, rather than wait for it while it holds the dying message's row:
// that transaction may be waiting for the dying message in turn (an
// EnqueueTx that replaces both), and one of the two would fail with
// "deadlock detected". A later death trims what it skipped.
func TestDeathSkipsLettersOthersHold(t *testing.T) {
	s := newStore(t)
	kill := func(id string) error { return die(t, s, store.Retention{MaxCount: 2}, id) }
	dead := func() []string { return leasetest.DeadIDs(t, s) }
	for _, id := range []string{"a", "b", "c"} {
		require.NoError(t, kill(id))
	}
	require.Equal(t, []string{"b", "c"}, dead(), "the newest two")

	tx, err := s.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	require.NoError(t, s.EnqueueTx(ctx, tx, msg("b", time.Time{})), "holds the dead letter b")
	require.NoError(t, kill("d"), "the death of d waited for the transaction that holds b")
	require.NoError(t, tx.Rollback(ctx))
	assert.Equal(t, []string{"b", "c", "d"}, dead(), "b was skipped")

	require.NoError(t, kill("e"))
	assert.Equal(t, []string{"d", "e"}, dead(), "the next death trims what the last skipped")
}

// TestClaimBytes: a claim stops at about 4 MiB of payloads, the first
// message whatever its size.
func TestClaimBytes(t *testing.T) {
	s := newStore(t)
	past := dbNow(t).Add(-time.Second)
	big := make([]byte, durable.MaxPayloadLen)
	var msgs []durable.Message
	for i := range 6 {
		msgs = append(msgs, durable.Message{ID: fmt.Sprint(i), Payload: big, Due: past})
	}
	require.NoError(t, s.Enqueue(ctx, msgs))
	c, err := s.Claim(ctx, store.ClaimParams{Limit: 10, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, c.Leases, 4, "4 MiB")
	assert.False(t, c.NextDue.IsZero(), "more due")
	assert.Equal(t, 2, c.DueSoon)
	c, err = s.Claim(ctx, store.ClaimParams{Limit: 10, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, c.Leases, 2)
}
