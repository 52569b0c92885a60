package redisstore

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

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
	var (
		mu     sync.Mutex
		queues = map[store.Store]string{}
	)
	open := func(t *testing.T, queue string) store.Store {
		s := openStore(t, c, queue, opts...)
		mu.Lock()
		defer mu.Unlock()
		queues[s] = queue
		return s
	}
	queue := func(s store.Store) string {
		mu.Lock()
		defer mu.Unlock()
		return queues[s]
	}
	return storetest.Harness{
		New: func(t *testing.T) store.Store {
			return open(t, fmt.Sprintf("contract%d", contractQueues.Add(1)))
		},
		Reopen: func(t *testing.T, s store.Store) store.Store {
			require.NoError(t, s.Close())
			return open(t, queue(s))
		},
		Second: func(t *testing.T, s store.Store) store.Store { return open(t, queue(s)) },
	}
}

func TestContract(t *testing.T) {
	srv := startRedis(t)
	storetest.Run(t, contractHarness(srv.client(t)))
}

func TestContractShards(t *testing.T) {
	srv := startRedis(t)
	storetest.Run(t, contractHarness(srv.client(t), WithShards(4)))
}
