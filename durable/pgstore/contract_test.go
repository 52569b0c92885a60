package pgstore

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/seed64e23a5c/timingwheel/durable/storetest"
)

// contractHarness makes, for each rule of the Store contract's suite, a
// store of a fresh queue on pool with opts, on the real clock (the
// database's is the machine's); Reopen and Second open stores of the same
// queue on the same pool, as another process would.
func contractHarness(pool *pgxpool.Pool, opts ...Option) storetest.Harness {
	return storetest.ForQueues(freshQueue, func(t *testing.T, queue string) store.Store {
		return openStore(t, pool, queue, opts...)
	})
}

// TestContract runs the Store contract's suite, each rule on a store of a
// fresh queue, all in one database.
func TestContract(t *testing.T) {
	storetest.Run(t, contractHarness(testPool(t)))
}

// TestContractSchema runs it again in a schema of its own, whose name
// needs quoting.
func TestContractSchema(t *testing.T) {
	storetest.Run(t, contractHarness(testPool(t), WithSchema(`Contract "Schema"`)))
}
