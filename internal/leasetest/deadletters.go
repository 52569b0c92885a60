package leasetest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// DeadIDs returns the IDs of the first 100 dead letters of s, oldest
// first: what the stores' tests of dead-letter retention compare.
func DeadIDs(t *testing.T, s durable.Store) []string {
	t.Helper()
	dead, err := s.DeadLetters(context.Background(), 100)
	require.NoError(t, err)
	var ids []string
	for _, m := range dead {
		ids = append(ids, m.ID)
	}
	return ids
}
