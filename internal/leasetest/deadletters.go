package leasetest

import (
	"context"
	"testing"

	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/stretchr/testify/require"
)

// DeadIDs returns the IDs of the first 100 dead letters of s, oldest
// first: what the stores' tests of dead-letter retention compare.
func DeadIDs(t *testing.T, s store.Store) []string {
	t.Helper()
	dead, _, err := s.List(context.Background(), store.ListParams{State: store.Dead, Limit: 100})
	require.NoError(t, err)
	var ids []string
	for _, m := range dead {
		ids = append(ids, m.ID)
	}
	return ids
}

// DeadLetters returns up to limit dead messages of s, in the order they
// died, each with its time of death as Due: what a store's DeadLetters
// returned before List(Dead) took its place.
func DeadLetters(ctx context.Context, s store.Store, limit int) ([]store.Message, error) {
	if limit <= 0 {
		return nil, nil
	}
	infos, _, err := s.List(ctx, store.ListParams{State: store.Dead, Limit: limit})
	out := make([]store.Message, len(infos))
	for i, info := range infos {
		out[i] = store.Message{ID: info.ID, Payload: info.Payload, Due: info.DiedAt}
	}
	return out, err
}
