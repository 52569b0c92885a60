package redisstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

func TestMain(m *testing.M) {
	redis.SetLogger(quietLogger{})
	if runChild() {
		return
	}
	goleak.VerifyTestMain(m)
}

// quietLogger silences go-redis, which logs every failed dial of the tests
// that stop Redis.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// newTestStore starts a redis-server and returns a store of queue "q" on
// it, closed by the test's cleanup, with its client and server.
func newTestStore(t testing.TB, opts ...Option) (*Store, *redis.Client, *redisServer) {
	t.Helper()
	srv := startRedis(t)
	c := srv.client(t)
	s := openStore(t, c, "q", opts...)
	return s, c, srv
}

// openStore returns a store closed by the test's cleanup.
func openStore(t testing.TB, c redis.UniversalClient, queue string, opts ...Option) *Store {
	t.Helper()
	s, err := New(c, queue, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// redisNow returns Redis's clock.
func redisNow(t testing.TB, c redis.UniversalClient) time.Time {
	t.Helper()
	now, err := c.Time(context.Background()).Result()
	require.NoError(t, err)
	return now
}

func msg(id string, due time.Time) durable.Message {
	return durable.Message{ID: id, Payload: []byte("payload of " + id), Due: due}
}

func ids(ls []store.Lease) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.ID
	}
	return out
}

func seqIDs(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%05d", prefix, i)
	}
	return out
}

// claimAll claims until nothing is due.
func claimAll(t testing.TB, s *Store, lease time.Duration) []store.Lease {
	t.Helper()
	var out []store.Lease
	for {
		c, err := s.Claim(context.Background(), store.ClaimParams{Limit: MaxClaim, Lease: lease})
		require.NoError(t, err)
		if len(c.Leases) == 0 {
			return out
		}
		out = append(out, c.Leases...)
	}
}

// waitClaim claims until it has n leases, for up to 10 seconds.
func waitClaim(t testing.TB, s *Store, lease time.Duration, n int) []store.Lease {
	t.Helper()
	var out []store.Lease
	deadline := time.Now().Add(10 * time.Second)
	for len(out) < n {
		if time.Now().After(deadline) {
			t.Fatalf("claimed %d of %d messages", len(out), n)
		}
		c, err := s.Claim(context.Background(), store.ClaimParams{Limit: n - len(out), Lease: lease})
		require.NoError(t, err)
		out = append(out, c.Leases...)
		if len(c.Leases) == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	return out
}
