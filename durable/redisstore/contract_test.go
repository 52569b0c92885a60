package redisstore

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/seed64e23a5c/timingwheel/durable/storetest"
)

// contractQueues numbers the queues of contractHarness, so that every
// store it makes is a fresh queue.
var contractQueues atomic.Int64

// contractHarness makes, for each rule of the Store contract's suite, a
// store of a fresh queue on c with opts; Reopen and Second open stores of
// the same queue (another Store on the same client, as another process
// has). Redis has its own clock (TIME), which the suite cannot move: it
// uses the real clock, the server's too. A store of several shards keeps
// its orders per shard, and says so (store.ShardedOrder): the suite checks
// those rules per shard.
func contractHarness(c redis.UniversalClient, opts ...Option) storetest.Harness {
	return storetest.ForQueues(func() string { return fmt.Sprintf("contract%d", contractQueues.Add(1)) }, func(t *testing.T, queue string) store.Store {
		return openStore(t, c, queue, opts...)
	})
}

func TestContract(t *testing.T) {
	srv := startRedis(t)
	storetest.Run(t, contractHarness(srv.client(t)))
}

func TestContractShards(t *testing.T) {
	srv := startRedis(t)
	storetest.Run(t, contractHarness(srv.client(t), WithShards(4)))
}
