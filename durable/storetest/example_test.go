package storetest_test

import (
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/seed64e23a5c/timingwheel/durable/memstore"
	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/seed64e23a5c/timingwheel/durable/storetest"
)

// The Harness of package durable/memstore's contract test: New makes an
// empty store, Reopen and Second open more handles on its messages
// (Store.Handle), as a restart and a second process would, and the suite
// moves the mock clock the stores run on. A store's test, in one of its
// _test.go files, then runs the suite with it:
//
//	func TestContract(t *testing.T) {
//		storetest.Run(t, h)
//	}
//
// This example is compiled, not run: Run needs the *testing.T of a test.
func Example() {
	mock := clock.NewMock()
	mock.Set(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	open := func(t *testing.T, s *memstore.Store) store.Store {
		t.Cleanup(func() { _ = s.Close() }) // closing twice is harmless
		return s
	}
	h := storetest.Harness{
		New: func(t *testing.T) store.Store { return open(t, memstore.New(mock)) },
		Reopen: func(t *testing.T, s store.Store) store.Store {
			_ = s.Close()
			return open(t, s.(*memstore.Store).Handle())
		},
		Second:  func(t *testing.T, s store.Store) store.Store { return open(t, s.(*memstore.Store).Handle()) },
		Now:     mock.Now,
		Advance: mock.Add,
	}

	testContract := func(t *testing.T) { storetest.Run(t, h) }
	_ = testContract
}
