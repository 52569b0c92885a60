package pgstore

import (
	"testing"

	"github.com/seed64e23a5c/timingwheel/internal/kindtest"
)

// TestKinds runs the queue-level scenarios of kinds, a message's
// MaxAttempts and Timeout, Snooze and Permanent (package kindtest) on
// PostgreSQL, on the real clock (the database's is the machine's), each on
// a store of a fresh queue; Reopen closes the store and opens its queue
// again on the same pool, as a restarted process would.
func TestKinds(t *testing.T) {
	kindtest.Run(t, kindtest.OnItsOwnClock(contractHarness(testPool(t))))
}
