package pgstore

import (
	"testing"
	"time"

	"github.com/seed64e23a5c/timingwheel/internal/leasetest"
)

func TestHeldCostsNothing(t *testing.T) {
	s := newStore(t)
	leasetest.HeldCostsNothing(t, s, 50*time.Millisecond, func() { time.Sleep(100 * time.Millisecond) })
}
