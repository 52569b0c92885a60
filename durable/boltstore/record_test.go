package boltstore

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

// encodeV1 writes r in the record format of version 1, the one of the
// files written before LastError and EnqueuedAt were kept.
func (r *record) encodeV1() []byte {
	b := make([]byte, recordHeaderV1+len(r.payload))
	b[0] = byte(r.state)
	r.encodeV1Fields(b)
	copy(b[recordHeaderV1:], r.payload)
	return b
}

// writeV1File writes, with bbolt alone, a file as version 1 wrote it: a
// pending message, one in flight (token 7, attempt 1, its lease ending at
// deadline) and a dead one (died at died).
func writeV1File(t *testing.T, path string, due, deadline, died time.Time) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketMsgs, bucketPending, bucketInflight, bucketDead, bucketMeta} {
			if _, err := tx.CreateBucket(name); err != nil {
				return err
			}
		}
		put := func(id string, r record, index []byte) {
			require.NoError(t, tx.Bucket(index).Put(r.key[:], []byte(id)))
			require.NoError(t, tx.Bucket(bucketMsgs).Put([]byte(id), r.encodeV1()))
			require.NoError(t, (&txn{meta: tx.Bucket(bucketMeta)}).count(r.state, 1))
		}
		put("old-pending", record{state: statePending, key: makeIndexKey(due.UnixNano(), 1), due: due.UnixNano(), payload: []byte("p")}, bucketPending)
		put("old-inflight", record{state: stateInflight, key: makeIndexKey(deadline.UnixNano(), 2), attempt: 1, token: 7,
			due: due.UnixNano(), payload: []byte("f")}, bucketInflight)
		put("old-dead", record{state: stateDead, key: makeIndexKey(died.UnixNano(), 3), attempt: 3, token: 5,
			due: due.UnixNano(), payload: []byte("d")}, bucketDead)
		if err := tx.Bucket(bucketPending).SetSequence(3); err != nil {
			return err
		}
		return tx.Bucket(bucketInflight).SetSequence(7)
	}))
}

// TestOpenVersion1File opens a file written in the record format of
// version 1: its messages, lease and dead letter work as before, their
// EnqueuedAt and LastError read as zero, and the records rewritten since
// are in version 2.
func TestOpenVersion1File(t *testing.T) {
	ctx := context.Background()
	mock := clock.NewMock()
	start := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	mock.Set(start)
	path := filepath.Join(t.TempDir(), "v1.db")
	due, deadline, died := start.Add(-time.Minute), start.Add(time.Minute), start.Add(-time.Hour)
	writeV1File(t, path, due, deadline, died)

	s, err := Open(path, WithClock(mock))
	require.NoError(t, err)
	defer s.Close()

	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, store.Stats{Pending: 1, InFlight: 1, Dead: 1, NextDue: fromUnixNano(due.UnixNano())}, st)

	p, err := s.Get(ctx, "old-pending")
	require.NoError(t, err)
	assert.Equal(t, store.Info{ID: "old-pending", Payload: []byte("p"), State: store.Pending, Due: fromUnixNano(due.UnixNano())}, p,
		"no EnqueuedAt and no LastError in a version 1 record")
	f, err := s.Get(ctx, "old-inflight")
	require.NoError(t, err)
	assert.Equal(t, store.Info{ID: "old-inflight", Payload: []byte("f"), State: store.InFlight, Attempt: 1, Deadline: fromUnixNano(deadline.UnixNano())}, f)
	dead, next, err := s.List(ctx, store.ListParams{State: store.Dead, Limit: 10})
	assert.Empty(t, next)
	require.NoError(t, err)
	require.Len(t, dead, 1)
	assert.Equal(t, store.Info{ID: "old-dead", Payload: []byte("d"), State: store.Dead, Attempt: 3, DiedAt: fromUnixNano(died.UnixNano())}, dead[0])

	// The old lease is still held by its token, and the pending message is claimed.
	old := store.LeaseRef{ID: "old-inflight", Token: 7}
	require.NoError(t, s.Extend(ctx, store.ExtendParams{Lease: old, By: time.Minute}))
	require.NoError(t, s.Ack(ctx, old))
	c, err := s.Claim(ctx, store.ClaimParams{Limit: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, c.Leases, 1)
	assert.Equal(t, "old-pending", c.Leases[0].ID)
	assert.Equal(t, 1, c.Leases[0].Attempt)
	assert.Empty(t, c.Leases[0].LastError)
	require.NoError(t, s.Retry(ctx, store.RetryParams{Lease: c.Leases[0].Ref(), Error: "after the upgrade"}))
	p, err = s.Get(ctx, "old-pending")
	require.NoError(t, err)
	assert.Equal(t, "after the upgrade", p.LastError, "a rewritten record keeps the new fields")
	assert.True(t, p.EnqueuedAt.IsZero(), "EnqueuedAt stays unknown until an Enqueue replaces the message")

	// An Enqueue of an old message's ID: it now has an EnqueuedAt.
	require.NoError(t, s.Enqueue(ctx, []store.Message{{ID: "old-pending", Payload: []byte("p2")}}))
	p, err = s.Get(ctx, "old-pending")
	require.NoError(t, err)
	assert.True(t, p.EnqueuedAt.Equal(start), "%v", p.EnqueuedAt)
	assert.Empty(t, p.LastError, "an Enqueue clears LastError")

	require.NoError(t, s.Requeue(ctx, store.RequeueParams{ID: "old-dead"}))
	c, err = s.Claim(ctx, store.ClaimParams{Limit: 2, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, c.Leases, 2)
	for _, l := range c.Leases {
		require.NoError(t, s.Ack(ctx, l.Ref()))
	}
	st, err = s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, store.Stats{}, st)

	// What is written now is version 2.
	require.NoError(t, s.Enqueue(ctx, []store.Message{{ID: "new"}}))
	require.NoError(t, s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketMsgs).Get([]byte("new"))
		require.NotEmpty(t, b)
		assert.Equal(t, byte(recordV2|byte(statePending)), b[0])
		return nil
	}))
}

func TestRecordRoundTrip(t *testing.T) {
	r := record{state: stateDead, key: makeIndexKey(-5, 9), attempt: 4, token: 11, due: 123, enqueuedAt: 456,
		lastError: "it failed", payload: []byte("body")}
	got, err := decodeRecord(r.encode())
	require.NoError(t, err)
	assert.Equal(t, r, got)

	r.lastError = strings.Repeat("x", store.MaxErrorLen+10)
	got, err = decodeRecord(r.encode())
	require.NoError(t, err)
	assert.Len(t, got.lastError, store.MaxErrorLen, "the text is cut to MaxErrorLen")
	assert.Equal(t, "body", string(got.payload))

	for _, b := range [][]byte{
		make([]byte, recordHeaderV1-1),                                           // short
		append([]byte{0x40 | byte(statePending)}, make([]byte, 50)...),           // unknown version
		append([]byte{recordV2 | byte(statePending)}, make([]byte, 40)...),       // version 2, short header
		func() []byte { b := r.encode(); b[45], b[46] = 0xff, 0xff; return b }(), // text longer than the record
	} {
		_, err := decodeRecord(b)
		require.ErrorIs(t, err, ErrCorrupt, "%x", b[:min(len(b), 8)])
	}
}
