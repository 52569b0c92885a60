package memstore_test

import (
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/memstore"
	"github.com/seed64e23a5c/timingwheel/durable/storetest"
)

func TestContract(t *testing.T) {
	mock := clock.NewMock()
	mock.Set(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) durable.Store {
			s := memstore.New(mock)
			t.Cleanup(func() { assert.NoError(t, s.Close()) })
			return s
		},
		Now:     mock.Now,
		Advance: mock.Add,
	})
}

func TestContractRealClock(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) durable.Store {
			s := memstore.New(nil)
			t.Cleanup(func() { assert.NoError(t, s.Close()) })
			return s
		},
	})
}
