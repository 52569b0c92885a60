package pgstore

import (
	"testing"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/storetest"
)

// TestContract runs the Store contract's suite, each rule on a store of a
// fresh queue, all in one database, on the real clock (the database's is
// the machine's).
func TestContract(t *testing.T) {
	pool := testPool(t)
	storetest.Run(t, storetest.Harness{New: func(t *testing.T) durable.Store {
		return openStore(t, pool, freshQueue())
	}})
}

// TestContractSchema runs it again in a schema of its own, whose name
// needs quoting.
func TestContractSchema(t *testing.T) {
	pool := testPool(t)
	storetest.Run(t, storetest.Harness{New: func(t *testing.T) durable.Store {
		return openStore(t, pool, freshQueue(), WithSchema(`Contract "Schema"`))
	}})
}
