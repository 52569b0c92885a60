package redisstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// pubsubClients counts the pub/sub connections of a Redis node.
func pubsubClients(t *testing.T, c *redis.Client) int {
	t.Helper()
	list, err := c.ClientList(context.Background()).Result()
	require.NoError(t, err)
	n := 0
	for line := range strings.Lines(list) {
		// A subscribed connection has sub or ssub above zero.
		for _, f := range strings.Fields(line) {
			k, v, _ := strings.Cut(f, "=")
			if (k == "sub" || k == "ssub") && v != "0" {
				n++
				break
			}
		}
	}
	return n
}

// TestOnePubSubConnectionWhateverTheShards: on one Redis, a store of 64
// shards holds one pub/sub connection, and still wakes on each shard.
func TestOnePubSubConnectionWhateverTheShards(t *testing.T) {
	srv := startRedis(t)
	c := srv.client(t)
	a := openStore(t, c, "q", WithShards(64), WithSafetyPoll(0))
	b := openStore(t, srv.client(t), "q", WithShards(64), WithSafetyPoll(0))
	w, stop := a.Wakeups()
	defer stop()
	require.True(t, woke(w, 5*time.Second))
	assert.Equal(t, 1, pubsubClients(t, c))
	assert.Equal(t, int64(1), a.wake.connections.Load())
	requireWakesOnEachEarliest(t, w, b, redisNow(t, c), 8)
}

// requireWakesOnEachEarliest enqueues n messages with b, each earlier
// than the last, and requires that each wakes w, whatever its shard.
func requireWakesOnEachEarliest(t *testing.T, w <-chan struct{}, b *Store, now time.Time, n int) {
	t.Helper()
	for i, id := range seqIDs("m", n) {
		for len(w) > 0 {
			<-w
		}
		require.NoError(t, b.Enqueue(ctx, []durable.Message{msg(id, now.Add(time.Hour-time.Duration(i)*time.Minute))}))
		assert.True(t, woke(w, 5*time.Second), "message %d, shard %d", i, shardOf(id, len(b.shards)))
	}
}

// TestClusterPubSubConnectionPerMaster: on a 3-master cluster, a store of
// 64 shards holds one pub/sub connection per master (3), and wakes on
// every shard.
func TestClusterPubSubConnectionPerMaster(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a 3-node Redis Cluster")
	}
	addrs := startCluster(t, 3)
	a := openStore(t, clusterClient(t, addrs), "q", WithShards(64), WithSafetyPoll(0))
	b := openStore(t, clusterClient(t, addrs), "q", WithShards(64), WithSafetyPoll(0))
	w, stop := a.Wakeups()
	defer stop()
	require.True(t, woke(w, 5*time.Second))
	require.Eventually(t, func() bool { return a.wake.connections.Load() == 3 }, 5*time.Second, time.Millisecond)
	total := 0
	for _, addr := range addrs {
		c := redis.NewClient(&redis.Options{Addr: addr})
		n := pubsubClients(t, c)
		_ = c.Close()
		assert.Equal(t, 1, n, addr)
		total += n
	}
	assert.Equal(t, 3, total)
	requireWakesOnEachEarliest(t, w, b, redisNow(t, clusterClient(t, addrs)), 12)
}
