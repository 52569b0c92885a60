package redisstore

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/seed64e23a5c/timingwheel/durable/storetest"
	"github.com/seed64e23a5c/timingwheel/internal/leasetest"
	"github.com/seed64e23a5c/timingwheel/internal/syncbuf"
)

// testShards runs the shard tests on stores a and b of one queue, on
// clients that reach the same Redis or cluster.
func testShards(t *testing.T, a, b *Store, now time.Time) {
	n := len(a.shards)
	const count = 300
	var msgs []durable.Message
	dues := map[string]time.Time{}
	for i, id := range seqIDs("m", count) {
		// Distinct due times in the past, in reverse order of the IDs.
		due := now.Add(-time.Duration(count-i) * time.Millisecond).Add(time.Duration(i) * time.Nanosecond)
		if i%10 == 0 {
			due = now.Add(-time.Hour) // some equal ones
		}
		dues[id] = due
		msgs = append(msgs, msg(id, due))
	}
	msgs = append(msgs, msg("future", now.Add(time.Hour)))
	require.NoError(t, a.Enqueue(ctx, msgs))

	// Every shard got some.
	perShard := make([]int, n)
	for _, m := range msgs {
		perShard[shardOf(m.ID, n)]++
	}
	for sh, k := range perShard {
		assert.Positive(t, k, "shard %d", sh)
	}

	st, err := b.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, count+1, st.Pending)
	assert.True(t, now.Add(-time.Hour).Equal(st.NextDue), "next due %v", st.NextDue)

	// Claims of one each take everything due, from all shards.
	var got []store.Lease
	for range count / 2 {
		c, err := b.Claim(ctx, store.ClaimParams{Limit: 1, Lease: time.Minute})
		require.NoError(t, err)
		require.Len(t, c.Leases, 1)
		got = append(got, c.Leases...)
	}
	// One large claim gets the rest, merged in due order.
	c, err := b.Claim(ctx, store.ClaimParams{Limit: MaxClaim, Lease: time.Minute})
	require.NoError(t, err)
	assert.Len(t, c.Leases, count-count/2)
	assert.True(t, sort.SliceIsSorted(c.Leases, func(i, j int) bool { return c.Leases[i].Due.Before(c.Leases[j].Due) }))
	assert.WithinDuration(t, c.Now.Add(time.Hour), c.NextDue, 2*time.Second)
	// The earliest deadline is that of the first claim of one.
	assert.False(t, c.NextDeadline.After(c.Now.Add(time.Minute)))
	assert.WithinDuration(t, got[0].Deadline, c.NextDeadline, time.Second)
	got = append(got, c.Leases...)
	seen := map[string]bool{}
	for _, l := range got {
		assert.False(t, seen[l.ID], "claimed twice: %s", l.ID)
		seen[l.ID] = true
		assert.True(t, dues[l.ID].Equal(l.Due))
	}
	assert.Len(t, seen, count)

	st, err = a.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, durable.Stats{Pending: 1, InFlight: count, NextDue: st.NextDue}, st)

	// Ack, retry, extend, cancel and requeue find each ID's shard.
	for i, l := range got {
		switch i % 3 {
		case 0:
			require.NoError(t, a.Ack(ctx, store.LeaseRef{ID: l.ID, Token: l.Token}))
		case 1:
			require.NoError(t, a.Extend(ctx, store.ExtendParams{Lease: store.LeaseRef{ID: l.ID, Token: l.Token}, By: time.Hour}))
			err := a.Retry(ctx, store.RetryParams{Lease: store.LeaseRef{ID: l.ID, Token: l.Token}, Dead: true})
			require.NoError(t, err)
		}
	}
	dl, err := leasetest.DeadLetters(ctx, b, 1000)
	require.NoError(t, err)
	assert.Len(t, dl, count/3)
	assert.True(t, sort.SliceIsSorted(dl, func(i, j int) bool { return dl[i].Due.Before(dl[j].Due) }))
	for _, m := range dl[:10] {
		require.NoError(t, a.Requeue(ctx, store.RequeueParams{ID: m.ID, Due: time.Time{}}))
	}
	for _, m := range dl[10:20] {
		ok, err := a.Cancel(ctx, m.ID)
		require.NoError(t, err)
		require.True(t, ok)
	}
	ok, err := a.Cancel(ctx, got[2].ID)
	assert.ErrorIs(t, err, durable.ErrInFlight)
	assert.False(t, ok)

	// Reap with a limit below the shard count, then the rest.
	r, err := durable.Reap(ctx, b, 1, durable.RetryPolicy{MaxAttempts: 5})
	require.NoError(t, err)
	assert.Zero(t, r.Returned+r.Dead, "the leases have a minute to go")
	st, err = a.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 11, st.Pending)
	assert.Equal(t, count/3, st.InFlight)
	assert.Equal(t, count/3-20, st.Dead)

	// Cancel everything pending, claim and expire the in-flight ones.
	for _, m := range append(dl[:10], msg("future", time.Time{})) {
		ok, err := a.Cancel(ctx, m.ID)
		require.NoError(t, err)
		require.True(t, ok)
	}
	for i, l := range got {
		if i%3 == 2 {
			require.NoError(t, a.Extend(ctx, store.ExtendParams{Lease: store.LeaseRef{ID: l.ID, Token: l.Token}, By: 0}))
		}
	}
	r, err = durable.Reap(ctx, b, 7, durable.RetryPolicy{MaxAttempts: 5})
	require.NoError(t, err)
	assert.Equal(t, 7, r.Returned, "a limit over all shards")
	r, err = durable.Reap(ctx, b, MaxReap, durable.RetryPolicy{MaxAttempts: 5})
	require.NoError(t, err)
	assert.Equal(t, count/3-7, r.Returned)
	assert.True(t, r.NextDeadline.IsZero())
	assert.False(t, r.NextDue.After(r.Now))
}

func TestShardsOnOneRedis(t *testing.T) {
	srv := startRedis(t)
	a := openStore(t, srv.client(t), "q", WithShards(4))
	b := openStore(t, srv.client(t), "q", WithShards(4))
	testShards(t, a, b, redisNow(t, srv.client(t)))
	keys, err := srv.client(t).Keys(ctx, "tw:*pending").Result()
	require.NoError(t, err)
	sort.Strings(keys)
	assert.Equal(t, []string{"tw:{q:0}#pending", "tw:{q:1}#pending", "tw:{q:2}#pending", "tw:{q:3}#pending"}, keys)
}

func TestShardsWakeups(t *testing.T) {
	srv := startRedis(t)
	a := openStore(t, srv.client(t), "q", WithShards(4), WithSafetyPoll(0))
	b := openStore(t, srv.client(t), "q", WithShards(4), WithSafetyPoll(0))
	w, _ := a.Wakeups()
	require.True(t, woke(w, 5*time.Second))
	for len(w) > 0 {
		<-w
	}
	now := redisNow(t, srv.client(t))
	for i, id := range seqIDs("m", 8) {
		require.NoError(t, b.Enqueue(ctx, []durable.Message{msg(id, now.Add(time.Hour-time.Duration(i)*time.Minute))}))
		assert.True(t, woke(w, 5*time.Second), "message %d, shard %d", i, shardOf(id, 4))
	}
}

func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a 3-node Redis Cluster")
	}
	addrs := startCluster(t, 3)
	newClient := func() *redis.ClusterClient { return clusterClient(t, addrs) }
	c1, c2 := newClient(), newClient()
	a := openStore(t, c1, "q", WithShards(6))
	b := openStore(t, c2, "q", WithShards(6))
	now := redisNow(t, c1)
	testShards(t, a, b, now)

	// The queue spread over the three masters.
	require.NoError(t, c1.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		keys, err := n.Keys(ctx, "tw:*").Result()
		if err != nil {
			return err
		}
		assert.NotEmpty(t, keys, n.Options().Addr)
		for _, k := range keys {
			assert.True(t, strings.HasPrefix(k, "tw:{q:") || k == "tw:{q}:shards", k)
		}
		return nil
	}))

	// The Store contract over six shards on three masters (which keep
	// no series: storetest checks that every series method says so).
	t.Run("Contract", func(t *testing.T) {
		storetest.Run(t, contractHarness(c1, WithShards(6)))
	})
	// A queue of one shard keeps its series in its slot.
	t.Run("ContractOneShard", func(t *testing.T) {
		storetest.Run(t, contractHarness(c1))
	})

	// Notifications cross nodes: a store waits on all six shard
	// channels, each on the node of its slot.
	wa := openStore(t, c1, "w", WithShards(6), WithSafetyPoll(0))
	wb := openStore(t, c2, "w", WithShards(6), WithSafetyPoll(0))
	w, _ := wa.Wakeups()
	require.True(t, woke(w, 5*time.Second))
	var chans []string
	for _, sh := range wa.shards {
		chans = append(chans, sh.channel())
	}
	require.Eventually(t, func() bool {
		subs := map[string]int64{}
		var mu sync.Mutex
		err := c1.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			m, err := n.PubSubShardNumSub(ctx, chans...).Result()
			mu.Lock()
			defer mu.Unlock()
			for ch, k := range m {
				subs[ch] += k
			}
			return err
		})
		if err != nil {
			return false
		}
		for _, ch := range chans {
			if subs[ch] == 0 {
				return false
			}
		}
		return true
	}, 5*time.Second, 10*time.Millisecond, "all six shard channels subscribed")
	for len(w) > 0 {
		<-w
	}
	for i, id := range seqIDs("w", 6) {
		require.NoError(t, wb.Enqueue(ctx, []durable.Message{msg(id, now.Add(time.Hour-time.Duration(i)*time.Minute))}))
		assert.True(t, woke(w, 5*time.Second), "message %d, shard %d", i, shardOf(id, 6))
	}

	// A queue runs on it: one process enqueues, two receive.
	testClusterQueue(t, newClient)

	// A queue of one shard lives in one slot, on one node.
	one := openStore(t, c1, "single")
	require.NoError(t, one.Enqueue(ctx, []durable.Message{msg("x", time.Time{}), msg("y", time.Time{})}))
	ls := claimAll(t, one, time.Minute)
	assert.Equal(t, []string{"x", "y"}, ids(ls))
	for _, l := range ls {
		require.NoError(t, one.Ack(ctx, store.LeaseRef{ID: l.ID, Token: l.Token}))
	}
}

// testClusterQueue runs durable queues of 3 shards on the cluster: a
// producer enqueues 300 messages due over 300ms, and two consumers, woken
// by notifications only, receive and ack them all, none before its due
// time.
func testClusterQueue(t *testing.T, newClient func() *redis.ClusterClient) {
	newQueue := func() *durable.Queue {
		s := openStore(t, newClient(), "cq", WithShards(3), WithSafetyPoll(0))
		q, err := durable.New(s)
		require.NoError(t, err)
		t.Cleanup(func() { _ = q.Close() })
		return q
	}
	producer, c1, c2 := newQueue(), newQueue(), newQueue()
	const n = 300
	start := time.Now()
	for i, id := range seqIDs("c", n) {
		due := start.Add(time.Duration(i) * time.Millisecond)
		require.NoError(t, producer.Enqueue(ctx, durable.Message{ID: id, Payload: []byte(due.Format(time.RFC3339Nano)), Due: due}))
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for _, q := range []*durable.Queue{c1, c2} {
		for range 2 {
			wg.Go(func() {
				for {
					mu.Lock()
					done := len(got) == n
					mu.Unlock()
					if done {
						return
					}
					d, err := q.Receive(rctx)
					if err != nil {
						return
					}
					now := time.Now()
					due, err := time.Parse(time.RFC3339Nano, string(d.Payload))
					assert.NoError(t, err)
					assert.False(t, now.Before(due), "%s received %v early", d.ID, due.Sub(now))
					assert.True(t, due.Equal(d.Due))
					assert.NoError(t, d.Ack(ctx))
					mu.Lock()
					got[d.ID]++
					done = len(got) == n
					mu.Unlock()
					if done {
						cancel()
					}
				}
			})
		}
	}
	wg.Wait()
	assert.Len(t, got, n)
	for id, k := range got {
		assert.Equal(t, 1, k, id)
	}
	st, err := producer.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, durable.Stats{}, st)
}

// TestQueuesOfShardNamesDoNotShareKeys runs queue "orders" of two shards
// next to queues "orders:0" and "orders:1", whose names are the hash tags
// of its shards: each queue sees its own messages only, and no key is
// shared.
func TestQueuesOfShardNamesDoNotShareKeys(t *testing.T) {
	srv := startRedis(t)
	c := srv.client(t)
	stores := map[string]*Store{
		"orders":   openStore(t, c, "orders", WithShards(2)),
		"orders:0": openStore(t, c, "orders:0"),
		"orders:1": openStore(t, c, "orders:1"),
	}
	for name, s := range stores {
		var msgs []durable.Message
		for i := range 10 {
			msgs = append(msgs, msg(fmt.Sprintf("%s/%d", name, i), time.Time{}))
		}
		require.NoError(t, s.Enqueue(ctx, msgs))
	}
	for name, s := range stores {
		st, err := s.Stats(ctx)
		require.NoError(t, err)
		assert.Equal(t, 10, st.Pending, name)
		ls := claimAll(t, s, time.Minute)
		require.Len(t, ls, 10, name)
		for _, l := range ls {
			assert.True(t, strings.HasPrefix(l.ID, name+"/"), "queue %s delivered %s", name, l.ID)
		}
	}
	seen := map[string]string{}
	for name, s := range stores {
		for _, sh := range s.shards {
			for _, k := range sh.keys {
				assert.Empty(t, seen[k], "%s is a key of %s and %s", k, seen[k], name)
				seen[k] = name
			}
		}
	}
	// The layout check still tells shard counts apart.
	_, err := New(c, "orders", WithShards(3))
	require.ErrorIs(t, err, ErrShardCount)
	_, err = New(c, "orders:0", WithShards(2))
	require.ErrorIs(t, err, ErrShardCount)
}

// TestClusterWakeupsAfterSlotMigration moves the slot of a queue's wake
// channel to another master of a Redis Cluster: Redis unsubscribes the
// store, which subscribes again on the slot's new node, waking, and new
// earliest messages wake it again.
func TestClusterWakeupsAfterSlotMigration(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a 3-node Redis Cluster")
	}
	addrs := startCluster(t, 3)
	newClient := func() *redis.ClusterClient { return clusterClient(t, addrs) }
	cc := newClient()
	var logs syncbuf.Buffer
	a := openStore(t, cc, "q", WithSafetyPoll(0), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	b := openStore(t, newClient(), "q", WithSafetyPoll(0))
	w, _ := a.Wakeups()
	require.True(t, woke(w, 5*time.Second))
	now := redisNow(t, cc)
	require.NoError(t, b.Enqueue(ctx, []durable.Message{msg("m1", now.Add(time.Hour))}))
	require.True(t, woke(w, 5*time.Second), "before the migration")

	// Move the slot: importing on dst, migrating on src, the keys, then
	// the slot's owner on every node, dst first.
	channel := a.shards[0].channel()
	nodes := map[string]*redis.Client{}
	nodeIDs := map[string]string{}
	for _, addr := range addrs {
		c := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { _ = c.Close() })
		nodes[addr] = c
		id, err := c.ClusterMyID(ctx).Result()
		require.NoError(t, err)
		nodeIDs[addr] = id
	}
	owner, err := cc.MasterForKey(ctx, channel)
	require.NoError(t, err)
	src := owner.Options().Addr
	var dst string
	for _, addr := range addrs {
		if addr != src {
			dst = addr
			break
		}
	}
	slot, err := nodes[src].ClusterKeySlot(ctx, channel).Result()
	require.NoError(t, err)
	t.Logf("moving slot %d from %s to %s", slot, src, dst)
	require.NoError(t, nodes[dst].Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", nodeIDs[src]).Err())
	require.NoError(t, nodes[src].Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", nodeIDs[dst]).Err())
	keys, err := nodes[src].ClusterGetKeysInSlot(ctx, int(slot), 100).Result()
	require.NoError(t, err)
	require.NotEmpty(t, keys)
	host, port, err := net.SplitHostPort(dst)
	require.NoError(t, err)
	args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
	for _, k := range keys {
		args = append(args, k)
	}
	for len(w) > 0 {
		<-w
	}
	require.NoError(t, nodes[src].Do(ctx, args...).Err())
	order := []string{dst, src}
	for _, addr := range addrs {
		if addr != src && addr != dst {
			order = append(order, addr)
		}
	}
	for _, addr := range order {
		require.NoError(t, nodes[addr].Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", nodeIDs[dst]).Err())
	}

	// Unsubscribed by src, the store subscribes on dst.
	require.True(t, woke(w, 10*time.Second), "the unsubscription and the new subscription wake")
	require.Eventually(t, func() bool {
		n, err := nodes[dst].PubSubShardNumSub(ctx, channel).Result()
		return err == nil && n[channel] == 1
	}, 10*time.Second, 10*time.Millisecond, "subscribed on the slot's new node")
	for len(w) > 0 {
		<-w
	}
	st, err := b.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, st.Pending, "the message moved with the slot")
	require.NoError(t, b.Enqueue(ctx, []durable.Message{msg("m0", now.Add(time.Minute))}))
	require.True(t, woke(w, 5*time.Second), "a new earliest message after the slot moved wakes")
	assert.Contains(t, logs.String(), "unsubscribed by Redis", "store a's log")
}

// clusterClient is a client of the cluster at addrs, closed with the test.
func clusterClient(t *testing.T, addrs []string) *redis.ClusterClient {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	t.Cleanup(func() { _ = c.Close() })
	return c
}
