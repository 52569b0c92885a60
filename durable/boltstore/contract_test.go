package boltstore_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable/boltstore"
	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/seed64e23a5c/timingwheel/durable/storetest"
)

// TestContract runs the Store contract's suite on the file store, each
// rule on a fresh file, on a mock clock of its own (which Reopen opens
// the file again on).
func TestContract(t *testing.T) {
	var (
		mock  *clock.Mock // the clock of the rule running
		paths = map[store.Store]string{}
	)
	open := func(t *testing.T, path string) store.Store {
		s, err := boltstore.Open(path, boltstore.WithClock(mock))
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, s.Close()) })
		paths[s] = path
		return s
	}
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) store.Store {
			mock = clock.NewMock()
			mock.Set(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
			return open(t, filepath.Join(t.TempDir(), "q.db"))
		},
		Reopen: func(t *testing.T, s store.Store) store.Store {
			require.NoError(t, s.Close())
			return open(t, paths[s])
		},
		Second: func(t *testing.T, s store.Store) store.Store {
			t.Skip("a file store's file is held by one handle: bbolt locks it, and a second Open " +
				"waits for the lock (ErrLocked), in this process as in another")
			return nil
		},
		Now:     func() time.Time { return mock.Now() },
		Advance: func(d time.Duration) { mock.Add(d) },
	})
}
