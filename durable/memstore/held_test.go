package memstore_test

import (
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/seed64e23a5c/timingwheel/durable/memstore"
	"github.com/seed64e23a5c/timingwheel/internal/leasetest"
)

func TestHeldCostsNothing(t *testing.T) {
	mock := clock.NewMock()
	leasetest.HeldCostsNothing(t, memstore.New(mock), time.Minute, func() { mock.Add(time.Minute) })
}
