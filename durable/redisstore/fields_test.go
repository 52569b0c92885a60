package redisstore

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// withFields is msg with a Kind (holding the separator of the fields
// hash), a MaxAttempts and a Timeout of nanoseconds.
func withFields(id string, due time.Time) durable.Message {
	m := msg(id, due)
	m.Kind, m.MaxAttempts, m.Timeout = "a|b|c", 3, 2*time.Second+1
	return m
}

// requireFieldsOf checks the fields of info against m's.
func requireFieldsOf(t *testing.T, m durable.Message, info store.Info, what string) {
	t.Helper()
	require.Equal(t, m.Kind, info.Kind, "%s: Kind", what)
	require.Equal(t, m.MaxAttempts, info.MaxAttempts, "%s: MaxAttempts", what)
	require.Equal(t, m.Timeout, info.Timeout, "%s: Timeout", what)
}

func TestFieldsArgRoundTrip(t *testing.T) {
	for _, m := range []store.Message{
		{},
		{Kind: "k"},
		{MaxAttempts: store.MaxMaxAttempts},
		{Timeout: 1<<63 - 1},
		{Kind: "|", MaxAttempts: 1, Timeout: 1},
		{Kind: strings.Repeat("é", store.MaxKindLen/2), MaxAttempts: 7, Timeout: time.Hour + 1},
	} {
		v := fieldsArg(&m)
		assert.Equal(t, m.Kind == "" && m.MaxAttempts == 0 && m.Timeout == 0, v == "", "%+v: no entry without fields", m)
		f, err := parseFields(v)
		require.NoError(t, err, v)
		assert.Equal(t, msgFields{kind: m.Kind, maxAttempts: m.MaxAttempts, timeout: m.Timeout}, f, v)
	}
	for _, bad := range []string{"1", "1|2", "x|2|k", "1|y|k"} {
		_, err := parseFields(bad)
		assert.Error(t, err, bad)
	}
}

// A message that has none of the fields costs no entry in the fields
// hash; the entry of one that has them goes with the message (Ack,
// Cancel, a replacement without them, a trim of the dead letters), and
// stays through Retry, death and Requeue.
func TestFieldsEntries(t *testing.T) {
	s, c, _ := newTestStore(t)
	entries := func() int64 { return hashLen(t, c, s, keyFields) }
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("plain", time.Time{})}))
	assert.Zero(t, entries(), "no fields, no entry")
	require.NoError(t, s.Enqueue(ctx, []durable.Message{withFields("plain", time.Time{})}))
	assert.Equal(t, int64(1), entries(), "replaced by a message with fields")
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("plain", time.Time{})}))
	assert.Zero(t, entries(), "replaced by a message without them")

	require.NoError(t, s.Enqueue(ctx, []durable.Message{withFields("acked", time.Time{}), withFields("cancelled", time.Now().Add(time.Hour))}))
	assert.Equal(t, int64(2), entries())
	found, err := s.Cancel(ctx, "cancelled")
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, int64(1), entries(), "cancelled")
	_, err = s.Cancel(ctx, "plain")
	require.NoError(t, err)
	cl, err := s.Claim(ctx, store.ClaimParams{Limit: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, cl.Leases, 1)
	require.NoError(t, s.Retry(ctx, store.RetryParams{Lease: cl.Leases[0].Ref(), Dead: true}))
	require.NoError(t, s.Requeue(ctx, store.RequeueParams{ID: "acked"}))
	assert.Equal(t, int64(1), entries(), "kept through death and Requeue")
	cl, err = s.Claim(ctx, store.ClaimParams{Limit: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, cl.Leases, 1)
	require.NoError(t, s.Ack(ctx, cl.Leases[0].Ref()))
	assert.Zero(t, entries(), "acked")

	// The dead letters trimmed by a death go with their entries.
	for _, id := range []string{"d1", "d2", "d3"} {
		require.NoError(t, s.Enqueue(ctx, []durable.Message{withFields(id, time.Time{})}))
		cl, err := s.Claim(ctx, store.ClaimParams{Limit: 1, Lease: time.Minute})
		require.NoError(t, err)
		require.Len(t, cl.Leases, 1)
		require.NoError(t, s.Retry(ctx, store.RetryParams{Lease: cl.Leases[0].Ref(), Dead: true, Retention: store.Retention{MaxCount: 1}}))
	}
	assert.Equal(t, int64(1), entries(), "the trimmed dead letters' entries went with them")
}

// A message written before the fields hash, or by a process of the
// version before it, reads as having none of the fields; and so does one
// that such a process replaced, although it leaves the former message's
// entry behind: the entry's nonce is not the new message's.
func TestFieldsOfTheFormerLayout(t *testing.T) {
	s, c, _ := newTestStore(t)
	past := redisNow(t, c).Add(-time.Second)
	require.NoError(t, s.Enqueue(ctx, []durable.Message{withFields("a", past), withFields("b", past)}))

	// a: written before the hash (its entry gone).
	require.NoError(t, c.HDel(ctx, "tw:{q}:fields", "a").Err())
	// b: replaced by a process of the version before the hash, which
	// writes its own nonce in meta and leaves the entry.
	meta, err := c.HGet(ctx, "tw:{q}:meta", "b").Result()
	require.NoError(t, err)
	old := meta[strings.LastIndexByte(meta, '|')+1:]
	require.NotEmpty(t, old)
	require.NoError(t, c.HSet(ctx, "tw:{q}:meta", "b", strings.TrimSuffix(meta, old)+"0123456789abcdef").Err())
	require.NoError(t, c.HSet(ctx, "tw:{q}:payload", "b", "v2").Err())

	zero := msg("", time.Time{})
	for _, id := range []string{"a", "b"} {
		info, err := s.Get(ctx, id)
		require.NoError(t, err)
		requireFieldsOf(t, zero, info, id+", Get")
	}
	list, _, err := s.List(ctx, store.ListParams{State: durable.Pending, Limit: 10})
	require.NoError(t, err)
	require.Len(t, list, 2)
	for _, info := range list {
		requireFieldsOf(t, zero, info, info.ID+", List")
	}
	cl, err := s.Claim(ctx, store.ClaimParams{Limit: 2, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, cl.Leases, 2)
	for _, l := range cl.Leases {
		requireFieldsOf(t, zero, store.Info{Kind: l.Kind, MaxAttempts: l.MaxAttempts, Timeout: l.Timeout}, l.ID+", Claim")
	}
}

// A series' step writes its message's fields, as Enqueue does, and a
// step that replaces the message without them drops them.
func TestSeriesStepWritesTheFields(t *testing.T) {
	s, _, _ := newTestStore(t)
	m := withFields("tick", time.Now().Add(time.Hour))
	_, ok, err := s.AdvanceSeries(ctx, store.SeriesStep{Name: "s", Fingerprint: "f", Next: m.Due, Message: m})
	require.NoError(t, err)
	require.True(t, ok)
	info, err := s.Get(ctx, "tick")
	require.NoError(t, err)
	requireFieldsOf(t, m, info, "written by a step")

	plain := msg("tick", m.Due.Add(time.Hour))
	sr, err := s.Series(ctx, "s")
	require.NoError(t, err)
	_, ok, err = s.AdvanceSeries(ctx, store.SeriesStep{Name: "s", ExpectFingerprint: sr.Fingerprint, ExpectLast: sr.Last,
		Fingerprint: "f", Last: m.Due, Next: plain.Due, Message: plain})
	require.NoError(t, err)
	require.True(t, ok)
	info, err = s.Get(ctx, "tick")
	require.NoError(t, err)
	requireFieldsOf(t, plain, info, "replaced by a step without them")
}
