package main

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/redisstore"
	"github.com/seed64e23a5c/timingwheel/internal/redistest"
)

// startRedis starts a redis-server of the test's own on a free loopback
// port, without persistence, and returns its address; the test's cleanup
// kills it. It skips the test if redis-server is not installed, unless
// REQUIRE_REDIS=1.
func startRedis(t *testing.T, extra ...string) string {
	t.Helper()
	bin := redistest.Binary(t, "redis-server")
	var lastErr error
	for range 5 {
		addr := freeAddr(t)
		_, port, _ := net.SplitHostPort(addr)
		dir := t.TempDir()
		args := append([]string{"--port", port, "--bind", "127.0.0.1", "--dir", dir,
			"--logfile", filepath.Join(dir, "redis.log"), "--save", "", "--appendonly", "no"}, extra...)
		cmd := exec.Command(bin, args...)
		require.NoError(t, cmd.Start())
		if lastErr = waitForRedis(addr); lastErr == nil {
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			})
			return addr
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	t.Fatalf("starting redis-server: %v", lastErr)
	return ""
}

// freeAddr returns a loopback address with a port that was free a moment
// ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// waitForRedis waits up to 10s for the Redis at addr to answer PING, with
// PONG or an error reply.
func waitForRedis(addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		switch {
		case err == nil, isRedisReply(err): // a reply (NOAUTH) says it is up
			return nil
		case time.Now().After(deadline):
			return err
		}
		time.Sleep(20 * time.Millisecond) // polling for the server to start, not for a result
	}
}

// newRedisBackend seeds the queue named queue on the Redis at addr.
func newRedisBackend(t *testing.T, addr, queue string) *backend {
	open := func(t *testing.T) (durable.Store, func()) {
		c := redis.NewClient(&redis.Options{Addr: addr})
		s, err := redisstore.New(c, queue)
		require.NoError(t, err)
		return s, func() {
			require.NoError(t, s.Close())
			require.NoError(t, c.Close())
		}
	}
	s, closeStore := open(t)
	soon := seed(t, s)
	closeStore()
	return &backend{
		queue:   fmt.Sprintf("redis://%s/0?queue=%s", addr, queue),
		soon:    soon.UTC(),
		store:   open,
		state:   func(t *testing.T) any { return redisWrites(t, addr) },
		stateIs: "Redis counted no change and holds the same keys",
	}
}

// writeCount is what a read-only command must not change on Redis: its
// count of changes (rdb_changes_since_last_save, which every write that
// changes data increments) and its number of keys.
type writeCount struct {
	changes, keys int64
}

func redisWrites(t *testing.T, addr string) writeCount {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	ctx := t.Context()
	info, err := c.Info(ctx, "persistence").Result()
	require.NoError(t, err)
	m := regexp.MustCompile(`rdb_changes_since_last_save:(\d+)`).FindStringSubmatch(info)
	require.NotNil(t, m, info)
	changes, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)
	keys, err := c.DBSize(ctx).Result()
	require.NoError(t, err)
	return writeCount{changes: changes, keys: keys}
}

// TestRedisWriteCounterCounts checks that the counter of
// TestReadOnlyCommandsWriteNothing sees a write twq makes.
func TestRedisWriteCounterCounts(t *testing.T) {
	addr := startRedis(t)
	b := newRedisBackend(t, addr, "orders")
	before := redisWrites(t, addr)
	twq(t, b.queue, "cancel", "p1").ok(t)
	after := redisWrites(t, addr)
	require.Greater(t, after.changes, before.changes)
}

func TestRedisErrors(t *testing.T) {
	addr := startRedis(t)
	b := newRedisBackend(t, addr, "orders")
	check := b.unchanged(t)
	for _, cmd := range [][]string{{"stats"}, {"dead"}, {"requeue", "x"}, {"cancel", "x"}, {"enqueue", "x"}} {
		twq(t, append([]string{"redis://" + addr + "/0?queue=other"}, cmd...)...).failed(t, exitError,
			`has no queue "other"`, "existing queues only")
		twq(t, append([]string{"redis://" + addr + "/1?queue=orders"}, cmd...)...).failed(t, exitError,
			`redis://`+addr+`/1?queue=orders has no queue "orders"`)
	}
	check()

	dead := freeAddr(t) // nothing listens there
	start := time.Now()
	twq(t, "-timeout", "500ms", "redis://"+dead+"/0?queue=orders", "stats").failed(t, exitError, "cannot reach Redis at redis://"+dead)
	require.Less(t, time.Since(start), 10*time.Second)

}

// TestRedisWrongPassword: the error says what Redis answered, and hides
// the password.
func TestRedisWrongPassword(t *testing.T) {
	addr := startRedis(t, "--requirepass", "right")
	r := twq(t, "redis://:secret@"+addr+"/0?queue=orders", "stats")
	r.failed(t, exitError, "redis://:xxxxx@"+addr, "WRONGPASS")
	require.NotContains(t, r.stderr, "secret")
}

// TestRedisEvictingServer: on a Redis that may evict keys, read-only
// commands work, and commands that write refuse, as redisstore.New does.
func TestRedisEvictingServer(t *testing.T) {
	b := newRedisBackendEvicting(t)
	twq(t, b.queue, "stats").ok(t)
	twq(t, b.queue, "cancel", "p1").failed(t, exitError, "maxmemory-policy is allkeys-lru")
}

func newRedisBackendEvicting(t *testing.T) *backend {
	addr := startRedis(t)
	b := newRedisBackend(t, addr, "orders")
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	require.NoError(t, c.ConfigSet(t.Context(), "maxmemory-policy", "allkeys-lru").Err())
	return b
}

// TestRedisShardedQueue: twq reads a queue's shard count from Redis, so
// it opens a queue of several shards without being told.
func TestRedisShardedQueue(t *testing.T) {
	addr := startRedis(t)
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	s, err := redisstore.New(c, "sharded", redisstore.WithShards(4))
	require.NoError(t, err)
	soon := seed(t, s)
	require.NoError(t, s.Close())
	url := "redis://" + addr + "/0?queue=sharded"

	var st statsJSON
	twq(t, "-json", url, "stats").ok(t).decode(t, &st)
	assert.Equal(t, statsJSON{Pending: 2, InFlight: 1, Dead: 1, NextDue: soon.UTC()}, st)
	twq(t, url, "cancel", "p2").ok(t)
	twq(t, url, "requeue", "d1", "-in", "2h").ok(t)
	twq(t, "-json", url, "stats").ok(t).decode(t, &st)
	assert.Equal(t, statsJSON{Pending: 2, InFlight: 1, Dead: 0, NextDue: soon.UTC()}, st)
}
