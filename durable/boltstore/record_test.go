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

// encodeV2 writes r in the record format of version 2, the one of the
// files written before Kind, MaxAttempts and Timeout were kept.
func (r *record) encodeV2() []byte {
	text := store.TruncateErrorText(r.lastError)
	b := make([]byte, recordHeaderV2+len(text)+len(r.payload))
	b[0] = recordV2 | byte(r.state)
	r.encodeV2Fields(b, text)
	n := recordHeaderV2 + copy(b[recordHeaderV2:], text)
	copy(b[n:], r.payload)
	return b
}

// writeOldFile writes, with bbolt alone, a file as an older version wrote
// it, each record encoded by encode: a pending message (enqueued at
// enqueued), one in flight (token 7, attempt 1, its lease ending at
// deadline) and a dead one (died at died, with the error text "old
// error"). The records have a Kind, MaxAttempts and Timeout, which the
// old encodings drop.
func writeOldFile(t *testing.T, path string, encode func(*record) []byte, enqueued, due, deadline, died time.Time) {
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
			r.enqueuedAt, r.kind, r.maxAttempts, r.timeout = enqueued.UnixNano(), "lost", 9, time.Second
			require.NoError(t, tx.Bucket(index).Put(r.key[:], []byte(id)))
			require.NoError(t, tx.Bucket(bucketMsgs).Put([]byte(id), encode(&r)))
			require.NoError(t, (&txn{meta: tx.Bucket(bucketMeta)}).count(r.state, 1))
		}
		put("old-pending", record{state: statePending, key: makeIndexKey(due.UnixNano(), 1), due: due.UnixNano(), payload: []byte("p")}, bucketPending)
		put("old-inflight", record{state: stateInflight, key: makeIndexKey(deadline.UnixNano(), 2), attempt: 1, token: 7,
			due: due.UnixNano(), payload: []byte("f")}, bucketInflight)
		put("old-dead", record{state: stateDead, key: makeIndexKey(died.UnixNano(), 3), attempt: 3, token: 5,
			due: due.UnixNano(), lastError: "old error", payload: []byte("d")}, bucketDead)
		if err := tx.Bucket(bucketPending).SetSequence(3); err != nil {
			return err
		}
		return tx.Bucket(bucketInflight).SetSequence(7)
	}))
}

// requireVersion checks the version of the record of id in s's file.
func requireVersion(t *testing.T, s *Store, id string, version byte) {
	t.Helper()
	require.NoError(t, s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketMsgs).Get([]byte(id))
		require.NotEmpty(t, b, id)
		assert.Equal(t, version, b[0]&0xf0, "the version of %q", id)
		return nil
	}))
}

// TestOpenVersion1File opens a file written in the record format of
// version 1: its messages, lease and dead letter work as before, their
// EnqueuedAt and LastError read as zero (and so do Kind, MaxAttempts and
// Timeout), and the records rewritten since are in version 3.
func TestOpenVersion1File(t *testing.T) {
	ctx := context.Background()
	mock := clock.NewMock()
	start := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	mock.Set(start)
	path := filepath.Join(t.TempDir(), "v1.db")
	due, deadline, died := start.Add(-time.Minute), start.Add(time.Minute), start.Add(-time.Hour)
	writeOldFile(t, path, (*record).encodeV1, start.Add(-2*time.Hour), due, deadline, died)

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

	// What is written now is version 3.
	require.NoError(t, s.Enqueue(ctx, []store.Message{{ID: "new"}}))
	requireVersion(t, s, "new", recordV3)
}

// TestOpenVersion2File opens a file written in the record format of
// version 2: its messages keep their EnqueuedAt and LastError, their
// Kind, MaxAttempts and Timeout read as zero, and a record rewritten in
// version 3 keeps them all; an Enqueue gives the message new ones.
func TestOpenVersion2File(t *testing.T) {
	ctx := context.Background()
	mock := clock.NewMock()
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	mock.Set(start)
	path := filepath.Join(t.TempDir(), "v2.db")
	enqueued, due, deadline, died := start.Add(-2*time.Hour), start.Add(-time.Minute), start.Add(time.Minute), start.Add(-time.Hour)
	writeOldFile(t, path, (*record).encodeV2, enqueued, due, deadline, died)
	at := func(t time.Time) time.Time { return fromUnixNano(t.UnixNano()) }

	s, err := Open(path, WithClock(mock))
	require.NoError(t, err)
	defer s.Close()

	p, err := s.Get(ctx, "old-pending")
	require.NoError(t, err)
	assert.Equal(t, store.Info{ID: "old-pending", Payload: []byte("p"), State: store.Pending, Due: at(due), EnqueuedAt: at(enqueued)}, p,
		"no Kind, MaxAttempts and Timeout in a version 2 record")
	f, err := s.Get(ctx, "old-inflight")
	require.NoError(t, err)
	assert.Equal(t, store.Info{ID: "old-inflight", Payload: []byte("f"), State: store.InFlight, Attempt: 1,
		Deadline: at(deadline), EnqueuedAt: at(enqueued)}, f)
	dead, _, err := s.List(ctx, store.ListParams{State: store.Dead, Limit: 10})
	require.NoError(t, err)
	require.Len(t, dead, 1)
	assert.Equal(t, store.Info{ID: "old-dead", Payload: []byte("d"), State: store.Dead, Attempt: 3, LastError: "old error",
		DiedAt: at(died), EnqueuedAt: at(enqueued)}, dead[0])

	// The old lease is still held; the pending message is claimed with no
	// fields, and its record rewritten in version 3 keeps what it had.
	require.NoError(t, s.Ack(ctx, store.LeaseRef{ID: "old-inflight", Token: 7}))
	c, err := s.Claim(ctx, store.ClaimParams{Limit: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, c.Leases, 1)
	assert.Equal(t, store.Message{ID: "old-pending", Payload: []byte("p"), Due: at(due)}, c.Leases[0].Message)
	requireVersion(t, s, "old-pending", recordV3)
	require.NoError(t, s.Retry(ctx, store.RetryParams{Lease: c.Leases[0].Ref(), Error: "after the upgrade", After: time.Hour}))
	p, err = s.Get(ctx, "old-pending")
	require.NoError(t, err)
	assert.Equal(t, store.Info{ID: "old-pending", Payload: []byte("p"), State: store.Pending, Due: at(start.Add(time.Hour)),
		Attempt: 1, LastError: "after the upgrade", EnqueuedAt: at(enqueued)}, p)

	// A dead letter requeued is rewritten with no fields; an Enqueue of
	// an old message's ID gives it the new message's, and keeps its
	// EnqueuedAt.
	requireVersion(t, s, "old-dead", recordV2)
	require.NoError(t, s.Requeue(ctx, store.RequeueParams{ID: "old-dead", Due: at(start.Add(time.Hour))}))
	requireVersion(t, s, "old-dead", recordV3)
	d, err := s.Get(ctx, "old-dead")
	require.NoError(t, err)
	assert.Equal(t, store.Info{ID: "old-dead", Payload: []byte("d"), State: store.Pending, Due: at(start.Add(time.Hour)),
		EnqueuedAt: at(enqueued)}, d)
	m := store.Message{ID: "old-dead", Kind: "mail", Payload: []byte("d2"), MaxAttempts: 4, Timeout: time.Second + 1}
	require.NoError(t, s.Enqueue(ctx, []store.Message{m}))
	d, err = s.Get(ctx, "old-dead")
	require.NoError(t, err)
	assert.Equal(t, store.Info{ID: "old-dead", Kind: "mail", Payload: []byte("d2"), MaxAttempts: 4, Timeout: time.Second + 1,
		State: store.Pending, Due: at(start), EnqueuedAt: at(enqueued)}, d)
}

func TestDecodeOldRecords(t *testing.T) {
	r := record{state: stateInflight, key: makeIndexKey(10, 2), attempt: 2, token: 3, due: 4, enqueuedAt: 5,
		kind: "k", maxAttempts: 6, timeout: 7, lastError: "e", payload: []byte("body")}

	got, err := decodeRecord(r.encodeV2())
	require.NoError(t, err)
	want := r
	want.kind, want.maxAttempts, want.timeout = "", 0, 0
	assert.Equal(t, want, got, "version 2: no Kind, MaxAttempts and Timeout")

	got, err = decodeRecord(r.encodeV1())
	require.NoError(t, err)
	want.enqueuedAt, want.lastError = 0, ""
	assert.Equal(t, want, got, "version 1: no EnqueuedAt and LastError either")

	// A version 2 record with an error text and no payload, and one with
	// neither.
	r.payload = nil
	got, err = decodeRecord(r.encodeV2())
	require.NoError(t, err)
	assert.Equal(t, "e", got.lastError)
	assert.Empty(t, got.payload)
	r.lastError = ""
	got, err = decodeRecord(r.encodeV2())
	require.NoError(t, err)
	assert.Empty(t, got.lastError)
	assert.Empty(t, got.payload)
}

func TestRecordRoundTrip(t *testing.T) {
	r := record{state: stateDead, key: makeIndexKey(-5, 9), attempt: 4, token: 11, due: 123, enqueuedAt: 456,
		kind: "order.close/é", maxAttempts: store.MaxMaxAttempts, timeout: 1500*time.Millisecond + 7,
		lastError: "it failed", payload: []byte("body")}
	got, err := decodeRecord(r.encode())
	require.NoError(t, err)
	assert.Equal(t, r, got)
	assert.Equal(t, recordV3|byte(stateDead), r.encode()[0])

	// Each variable part empty in turn, and all of them.
	for _, change := range []func(r *record){
		func(r *record) { r.kind = "" },
		func(r *record) { r.lastError = "" },
		func(r *record) { r.payload = nil },
		func(r *record) { *r = record{state: statePending, key: r.key} },
		func(r *record) { r.kind = strings.Repeat("k", store.MaxKindLen) },
	} {
		r := r
		change(&r)
		got, err := decodeRecord(r.encode())
		require.NoError(t, err)
		assert.Equal(t, r, got)
	}

	r.lastError = strings.Repeat("x", store.MaxErrorLen+10)
	got, err = decodeRecord(r.encode())
	require.NoError(t, err)
	assert.Len(t, got.lastError, store.MaxErrorLen, "the text is cut to MaxErrorLen")
	assert.Equal(t, "order.close/é", got.kind)
	assert.Equal(t, "body", string(got.payload))

	for _, b := range [][]byte{
		make([]byte, recordHeaderV1-1),                                           // short
		append([]byte{0x40 | byte(statePending)}, make([]byte, 70)...),           // unknown version
		append([]byte{recordV2 | byte(statePending)}, make([]byte, 40)...),       // version 2, short header
		append([]byte{recordV3 | byte(statePending)}, make([]byte, 55)...),       // version 3, short header
		func() []byte { b := r.encode(); b[45], b[46] = 0xff, 0xff; return b }(), // text longer than the record
		func() []byte { b := r.encode(); b[59], b[60] = 0xff, 0xff; return b }(), // kind longer than the record
		func() []byte { b := r.encode(); b[47] = 0x80; return b }(),              // MaxAttempts beyond MaxMaxAttempts
		func() []byte { b := r.encode(); b[51] = 0x80; return b }(),              // negative Timeout
		func() []byte { b := r.encodeV2(); b[45], b[46] = 0xff, 0xff; return b }(),
	} {
		_, err := decodeRecord(b)
		require.ErrorIs(t, err, ErrCorrupt, "%x", b[:min(len(b), 8)])
	}
}

// TestRecordAllocs checks that a message with no Kind and no error text
// costs no allocation beyond its payload's, to decode as to encode.
func TestRecordAllocs(t *testing.T) {
	plain := record{state: statePending, attempt: 1, token: 2, due: 3, enqueuedAt: 4, payload: []byte("body")}
	b := plain.encode()
	assert.InDelta(t, 1, testing.AllocsPerRun(100, func() { _ = plain.encode() }), 0, "encode: the record")
	assert.InDelta(t, 1, testing.AllocsPerRun(100, func() { _, _ = decodeRecord(b) }), 0, "decode: the payload")

	kinded := plain
	kinded.kind, kinded.lastError = "order.close", "it failed"
	b = kinded.encode()
	assert.InDelta(t, 1, testing.AllocsPerRun(100, func() { _ = kinded.encode() }), 0, "encode: the record")
	assert.InDelta(t, 3, testing.AllocsPerRun(100, func() { _, _ = decodeRecord(b) }), 0, "decode: payload, kind and text")
}
