package durable_test

import (
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/storetest"
)

// TestBoltStoreContract runs the Store contract's suite on the file store,
// each rule on a fresh file on a mock clock of its own.
func TestBoltStoreContract(t *testing.T) {
	var mock *clock.Mock // the clock of the store of the rule running
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) durable.Store {
			s, m := durable.MockBoltStore(t)
			mock = m
			return s
		},
		Now:     func() time.Time { return mock.Now() },
		Advance: func(d time.Duration) { mock.Add(d) },
	})
}
