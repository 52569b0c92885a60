package redisstore

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// woke reports whether ch receives within d.
func woke(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

func TestWakeupsOnNewEarliest(t *testing.T) {
	srv := startRedis(t)
	a := openStore(t, srv.client(t), "q", WithSafetyPoll(0))
	b := openStore(t, srv.client(t), "q", WithSafetyPoll(0))
	w1, _ := a.Wakeups()
	w2, _ := a.Wakeups()
	// The subscription itself wakes: notifications may have been missed
	// before it.
	require.True(t, woke(w1, 5*time.Second), "woken when subscribed")
	require.True(t, woke(w2, time.Second))

	now := redisNow(t, srv.client(t))
	const wait, quiet = 5 * time.Second, 200 * time.Millisecond
	require.NoError(t, b.Enqueue(ctx, []durable.Message{msg("late", now.Add(time.Hour))}))
	assert.True(t, woke(w1, wait), "first pending message")
	assert.True(t, woke(w2, wait), "every channel wakes")

	require.NoError(t, b.Enqueue(ctx, []durable.Message{msg("later", now.Add(2*time.Hour))}))
	assert.False(t, woke(w1, quiet), "not the earliest: no wake-up")

	require.NoError(t, b.Enqueue(ctx, []durable.Message{msg("sooner", now.Add(30*time.Minute))}))
	assert.True(t, woke(w1, wait), "new earliest")

	// Retry, Reap and Requeue make messages pending: they wake too when
	// the message is the earliest.
	require.NoError(t, b.Enqueue(ctx, []durable.Message{msg("x", time.Time{})}))
	require.True(t, woke(w1, wait))
	ls := claimAll(t, b, 0)
	require.Len(t, ls, 1)
	assert.False(t, woke(w1, quiet), "a claim does not wake")
	r, err := durable.Reap(ctx, b, 10, durable.RetryPolicy{MaxAttempts: 10})
	require.NoError(t, err)
	require.Equal(t, 1, r.Returned)
	assert.True(t, woke(w1, wait), "reaped")

	ls = claimAll(t, b, time.Minute)
	require.Len(t, ls, 1)
	err = b.Retry(ctx, store.RetryParams{Lease: store.LeaseRef{ID: "x", Token: ls[0].Token}})
	require.NoError(t, err)
	assert.True(t, woke(w1, wait), "retried")

	ls = claimAll(t, b, time.Minute)
	err = b.Retry(ctx, store.RetryParams{Lease: store.LeaseRef{ID: "x", Token: ls[0].Token}, Dead: true})
	require.NoError(t, err)
	assert.False(t, woke(w1, quiet), "a death does not wake")
	require.NoError(t, b.Requeue(ctx, store.RequeueParams{ID: "x", Due: time.Time{}}))
	assert.True(t, woke(w1, wait), "requeued")
}

func TestWakeupsSafetyPoll(t *testing.T) {
	srv := startRedis(t)
	s := openStore(t, srv.client(t), "q", WithSafetyPoll(100*time.Millisecond))
	w, _ := s.Wakeups()
	require.True(t, woke(w, 5*time.Second))
	n := 0
	start := time.Now()
	for time.Since(start) < time.Second {
		if woke(w, time.Second) {
			n++
		}
	}
	// One every 50 to 100 ms.
	assert.GreaterOrEqual(t, n, 5)
	assert.LessOrEqual(t, n, 25)
}

func TestWakeupsNeverBlock(t *testing.T) {
	srv := startRedis(t)
	a := openStore(t, srv.client(t), "q", WithSafetyPoll(0))
	b := openStore(t, srv.client(t), "q", WithSafetyPoll(0))
	w, _ := a.Wakeups()
	require.True(t, woke(w, 5*time.Second))
	now := redisNow(t, srv.client(t))
	// Nobody reads w: a hundred new earliest messages.
	before := a.wake.messages.Load()
	for i := range 100 {
		require.NoError(t, b.Enqueue(ctx, []durable.Message{msg(seqIDs("m", 100)[i], now.Add(time.Hour-time.Duration(i)*time.Second))}))
	}
	require.Eventually(t, func() bool { return a.wake.messages.Load()-before == 100 },
		10*time.Second, time.Millisecond, "every publication reached the subscriber")
	require.Len(t, w, 1)
	<-w
	assert.False(t, woke(w, 100*time.Millisecond), "one wake-up held, the others dropped")
}

func TestWakeupsAfterReconnect(t *testing.T) {
	srv := startRedis(t)
	a := openStore(t, srv.client(t), "q", WithSafetyPoll(0))
	w, _ := a.Wakeups()
	require.True(t, woke(w, 5*time.Second))
	srv.restart()
	// Notifications may have been lost while the connection was down:
	// resubscribing wakes.
	require.True(t, woke(w, 10*time.Second), "woken when subscribed again")
	b := openStore(t, srv.client(t), "q", WithSafetyPoll(0))
	require.NoError(t, b.Enqueue(ctx, []durable.Message{msg("a", time.Time{})}))
	assert.True(t, woke(w, 5*time.Second), "notifications flow again")
}

// TestWakeupsBetweenUsersWithoutInfo runs two stores of a queue as two
// Redis users, one of which may not run INFO: they agree on the kind of
// channel (the server decides, in the scripts), and wake each other.
func TestWakeupsBetweenUsersWithoutInfo(t *testing.T) {
	srv := startRedis(t)
	c := srv.client(t)
	require.NoError(t, c.Do(ctx, "ACL", "SETUSER", "noinfo", "on", ">pw", "~*", "&*", "+@all", "-info").Err())
	o := srv.options()
	o.Username, o.Password = "noinfo", "pw"
	c2 := redis.NewClient(o)
	t.Cleanup(func() { _ = c2.Close() })
	require.Error(t, c2.Info(ctx, "server").Err(), "INFO is denied")

	a := openStore(t, c, "q", WithSafetyPoll(0))
	b := openStore(t, c2, "q", WithSafetyPoll(0))
	wa, _ := a.Wakeups()
	wb, _ := b.Wakeups()
	require.True(t, woke(wa, 5*time.Second))
	require.True(t, woke(wb, 5*time.Second))
	// Redis 7: both subscribed to the shard channel.
	require.Eventually(t, func() bool {
		n, err := c.PubSubShardNumSub(ctx, a.shards[0].channel()).Result()
		return err == nil && n[a.shards[0].channel()] == 2
	}, 5*time.Second, time.Millisecond)

	now := redisNow(t, c)
	require.NoError(t, b.Enqueue(ctx, []durable.Message{msg("from-b", now.Add(time.Hour))}))
	assert.True(t, woke(wa, 5*time.Second), "a is woken by b")
	require.True(t, woke(wb, 5*time.Second))
	require.NoError(t, a.Enqueue(ctx, []durable.Message{msg("from-a", now.Add(time.Minute))}))
	assert.True(t, woke(wb, 5*time.Second), "b is woken by a")
}
