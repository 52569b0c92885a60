package durable

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// TestDeadLetterRetentionDefaultsAndChecks: the queue keeps
// DefaultRetention unless told otherwise, and refuses a negative bound.
func TestDeadLetterRetentionDefaultsAndChecks(t *testing.T) {
	cfg := defaultConfig()
	assert.Equal(t, store.Retention{MaxCount: DefaultDeadLetterCount, MaxAge: DefaultDeadLetterAge}, cfg.retention)
	require.Error(t, store.Retention{MaxCount: -1}.Validate())
	require.Error(t, store.Retention{MaxAge: -time.Second}.Validate())
	require.NoError(t, store.Retention{}.Validate(), "zero: no limit")
	_, err := Open(filepath.Join(t.TempDir(), "q.db"), WithDeadLetterRetention(-1, 0))
	require.Error(t, err)
	_, err = Open(filepath.Join(t.TempDir(), "q.db"), WithDeadLetterRetention(0, -time.Second))
	require.Error(t, err)
}
