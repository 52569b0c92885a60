package redisstore

import (
	"testing"

	"github.com/seed64e23a5c/timingwheel/internal/kindtest"
)

// TestKinds runs the queue-level scenarios of kinds, a message's
// MaxAttempts and Timeout, Snooze and Permanent (package kindtest) on
// Redis, on the real clock (the server's TIME is the machine's), each on
// a store of a fresh queue; Reopen closes the store and opens its queue
// again on the same client, as a restarted process would.
func TestKinds(t *testing.T) {
	srv := startRedis(t)
	kindtest.Run(t, kindtest.OnItsOwnClock(contractHarness(srv.client(t))))
}

// TestKindsShards runs them on a store of several shards.
func TestKindsShards(t *testing.T) {
	srv := startRedis(t)
	kindtest.Run(t, kindtest.OnItsOwnClock(contractHarness(srv.client(t), WithShards(4))))
}
