package mysqlstore

import (
	"testing"

	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/seed64e23a5c/timingwheel/durable/storetest"
	"github.com/seed64e23a5c/timingwheel/internal/kindtest"
)

// TestKinds runs the queue-level scenarios of kinds, a message's
// MaxAttempts and Timeout, Snooze and Permanent (package kindtest) on
// MariaDB, on the real clock (the database's is the machine's), each on a
// store of a fresh queue; Reopen closes the store and opens its queue
// again on the same *sql.DB, as a restarted process would.
func TestKinds(t *testing.T) {
	db := testDBHandle(t)
	kindtest.Run(t, kindtest.OnItsOwnClock(storetest.ForQueues(freshQueue, func(t *testing.T, queue string) store.Store {
		return openStore(t, db, queue)
	})))
}
