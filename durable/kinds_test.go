package durable_test

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/memstore"
	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/seed64e23a5c/timingwheel/internal/kindtest"
)

// memHarness opens memstores: Reopen is another handle on the same
// messages, as the store opened again after Close.
func memHarness(mock bool) kindtest.Harness {
	open := func(t *testing.T, s *memstore.Store) store.Store {
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	return kindtest.Harness{
		New: func(t *testing.T, c clock.Clock) store.Store { return open(t, memstore.New(c)) },
		Reopen: func(t *testing.T, s store.Store) store.Store {
			require.NoError(t, s.Close())
			return open(t, s.(*memstore.Store).Handle())
		},
		Mock: mock,
	}
}

// TestKindsMemstore runs the scenarios of kinds (package kindtest) on
// memstore and a mock clock.
func TestKindsMemstore(t *testing.T) { kindtest.Run(t, memHarness(true)) }

// TestKindsMemstoreRealClock runs them on the real clock, with the short
// durations of the stores on a server.
func TestKindsMemstoreRealClock(t *testing.T) { kindtest.Run(t, memHarness(false)) }

// TestKindsBoltStore runs the scenarios on the file of Open, on a mock
// clock: Reopen closes the file and opens it again.
func TestKindsBoltStore(t *testing.T) {
	type file struct {
		path string
		c    clock.Clock
	}
	var (
		mu    sync.Mutex
		files = map[store.Store]file{}
	)
	open := func(t *testing.T, f file) store.Store {
		s, err := durable.OpenBoltStore(f.path, durable.WithClock(f.c))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		mu.Lock()
		defer mu.Unlock()
		files[s] = f
		return s
	}
	kindtest.Run(t, kindtest.Harness{
		New: func(t *testing.T, c clock.Clock) store.Store {
			return open(t, file{filepath.Join(t.TempDir(), "q.db"), c})
		},
		Reopen: func(t *testing.T, s store.Store) store.Store {
			require.NoError(t, s.Close())
			mu.Lock()
			f := files[s]
			mu.Unlock()
			return open(t, f)
		},
		Mock: true,
	})
}
