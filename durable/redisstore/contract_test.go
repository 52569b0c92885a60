package redisstore

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/storetest"
)

// contractQueues numbers the queues of contractHarness, so that every
// store it makes is a fresh queue.
var contractQueues atomic.Int64

// contractHarness makes, for each rule of the Store contract's suite, a
// store of a fresh queue on c with opts. Redis has its own clock (TIME),
// which the suite cannot move: it uses the real clock, the server's too.
// The rules named in skip (by their name under the test, "Claim/EarliestFirst")
// are skipped, with the reason given.
func contractHarness(c redis.UniversalClient, skip map[string]string, opts ...Option) storetest.Harness {
	return storetest.Harness{New: func(t *testing.T) durable.Store {
		_, rule, _ := strings.Cut(t.Name(), "/")
		if strings.HasPrefix(t.Name(), "TestCluster/") {
			_, rule, _ = strings.Cut(rule, "/")
		}
		if why, ok := skip[rule]; ok {
			t.Skip(why)
		}
		return openStore(t, c, fmt.Sprintf("contract%d", contractQueues.Add(1)), opts...)
	}}
}

// shardedDeviations are the rules of the Store doc that a store of several
// shards does not keep, as WithShards and Claim document: the order across
// shards is earliest first on a best-effort basis (each shard is asked for
// its share of a claim, or of a reap, and its own earliest), and a Claim
// may hand out fewer than limit-held. Store.List allows its order among
// equal times within a shard only; the Store doc does not say so of Claim,
// Reap and held leases.
var shardedDeviations = map[string]string{
	"Claim/EarliestFirst":                         "with shards, Claim is earliest first within a shard only (WithShards)",
	"Claim/EqualDueKeepsWriteOrder":               "with shards, equal due times keep the order of the writes within a shard only (WithShards)",
	"Claim/HeldHandsOutTheEarliestLimitMinusHeld": "with shards, a Claim may hand out fewer than limit-held (Claim)",
	"Reap/EarliestDeadlineFirst":                  "with shards, Reap is earliest first within a shard only",
	"Expired/ReadsOnlyEarliestFirst":              "with shards, Expired is earliest first within a shard only",
	"List/EqualTimesInWriteOrder":                 "with shards, List keeps the order of equal times within a shard only (Store.List)",
}

func TestContract(t *testing.T) {
	srv := startRedis(t)
	storetest.Run(t, contractHarness(srv.client(t), nil))
}

func TestContractShards(t *testing.T) {
	srv := startRedis(t)
	storetest.Run(t, contractHarness(srv.client(t), shardedDeviations, WithShards(4)))
}
