package mysqlstore

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// requireFieldsOf checks that the message id of s has m's Kind,
// MaxAttempts and Timeout.
func requireFieldsOf(t *testing.T, s *Store, m store.Message, why string) {
	t.Helper()
	info, err := s.Get(ctx, m.ID)
	require.NoError(t, err, why)
	require.Equal(t, []any{m.Kind, m.MaxAttempts, m.Timeout}, []any{info.Kind, info.MaxAttempts, info.Timeout}, why)
}

// The messages written by the caller's transaction (EnqueueTx), by a
// series' step (AdvanceSeries), and by an Enqueue of several statements
// keep their Kind, MaxAttempts and Timeout, at their limits too.
func TestFieldsOfEveryWrite(t *testing.T) {
	s := newStore(t)
	longest := store.Message{ID: "longest", Kind: strings.Repeat("é", store.MaxKindLen/2),
		MaxAttempts: store.MaxMaxAttempts, Timeout: time.Duration(1<<63 - 1)}
	tx := begin(t)
	require.NoError(t, s.EnqueueTx(ctx, tx, longest, store.Message{ID: "tx", Kind: "k", MaxAttempts: 1, Timeout: 1}))
	require.NoError(t, tx.Commit())
	requireFieldsOf(t, s, longest, "EnqueueTx, the limits")
	requireFieldsOf(t, s, store.Message{ID: "tx", Kind: "k", MaxAttempts: 1, Timeout: 1}, "EnqueueTx")

	step := store.Message{ID: "series-1", Kind: "tick", MaxAttempts: 4, Timeout: time.Minute + 3}
	_, done, err := s.AdvanceSeries(ctx, store.SeriesStep{Name: "every", Fingerprint: "f", Next: time.Now(), Message: step})
	require.NoError(t, err)
	require.True(t, done)
	requireFieldsOf(t, s, step, "a series' step")

	// More than one statement's rows: one transaction of several.
	var many []store.Message
	for i := range maxEnqueueRows + 10 {
		many = append(many, store.Message{ID: fmt.Sprintf("m%05d", i), Kind: fmt.Sprint("kind ", i%7),
			MaxAttempts: i, Timeout: time.Duration(i) * time.Nanosecond})
	}
	require.NoError(t, s.Enqueue(ctx, many))
	for _, i := range []int{0, 1, maxEnqueueRows - 1, maxEnqueueRows, len(many) - 1} {
		requireFieldsOf(t, s, many[i], many[i].ID)
	}
}
