package mysqlstore

import (
	"testing"

	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/seed64e23a5c/timingwheel/durable/storetest"
)

// TestContract runs the store contract's suite, each rule on a store of a
// fresh queue, all in one database, on the real clock (the database's is
// the machine's).
func TestContract(t *testing.T) {
	db := testDBHandle(t)
	storetest.Run(t, storetest.Harness{New: func(t *testing.T) store.Store {
		return openStore(t, db, freshQueue())
	}})
}
