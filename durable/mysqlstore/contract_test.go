package mysqlstore

import (
	"testing"

	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/seed64e23a5c/timingwheel/durable/storetest"
)

// TestContract runs the store contract's suite, each rule on a store of a
// fresh queue, all in one database, on the real clock (the database's is
// the machine's). Reopen closes the store and opens its queue again on
// the same *sql.DB, as a process restarting would; Second opens another
// store of the same queue on it, as a second process would.
func TestContract(t *testing.T) {
	db := testDBHandle(t)
	storetest.Run(t, storetest.ForQueues(freshQueue, func(t *testing.T, queue string) store.Store {
		return openStore(t, db, queue)
	}))
}
