package memstore_test

import (
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"

	"github.com/seed64e23a5c/timingwheel/durable/memstore"
	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/seed64e23a5c/timingwheel/durable/storetest"
)

// harness opens stores on c: Reopen and Second are further handles on the
// same messages (Store.Handle).
func harness(c clock.Clock) storetest.Harness {
	open := func(t *testing.T, s *memstore.Store) store.Store {
		t.Cleanup(func() { assert.NoError(t, s.Close()) })
		return s
	}
	return storetest.Harness{
		New: func(t *testing.T) store.Store { return open(t, memstore.New(c)) },
		Reopen: func(t *testing.T, s store.Store) store.Store {
			assert.NoError(t, s.Close())
			return open(t, s.(*memstore.Store).Handle())
		},
		Second: func(t *testing.T, s store.Store) store.Store { return open(t, s.(*memstore.Store).Handle()) },
	}
}

func TestContract(t *testing.T) {
	mock := clock.NewMock()
	mock.Set(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	h := harness(mock)
	h.Now, h.Advance = mock.Now, mock.Add
	storetest.Run(t, h)
}

func TestContractRealClock(t *testing.T) {
	storetest.Run(t, harness(nil))
}
