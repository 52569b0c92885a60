package redisstore

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/seed64e23a5c/timingwheel/internal/durablebench"
)

// TestScriptsAreShort has a backlog of 20,000 messages come due at once,
// and checks that no script ran long: each claims or reaps at most
// MaxClaim or MaxReap of them, and takes at most 20 ms of Redis's CPU.
//
// A script's time in Redis's slow log is wall-clock time, which includes
// the time Redis waits for a CPU: on a loaded machine of two cores (go
// test ./... runs two packages at once there) it triples, the longest of
// the 80 scripts reaching 20 to 40 ms. The cost of the script itself is
// the CPU time of Redis's main thread during the call (INFO cpu, from
// getrusage), which the test measures around each call: 2 to 5 ms for 500
// messages, under 10 ms even on a loaded machine.
func TestScriptsAreShort(t *testing.T) {
	s, c, _ := newTestStore(t)
	n := 20_000
	if testing.Short() {
		n = 5_000
	}
	past := redisNow(t, c).Add(-time.Minute)
	require.NoError(t, durablebench.PreloadStore(ctx, s, "m", n, 100, func(int) time.Time { return past }))

	require.NoError(t, c.ConfigSet(ctx, "slowlog-log-slower-than", "0").Err())
	require.NoError(t, c.ConfigSet(ctx, "slowlog-max-len", "100000").Err())
	require.NoError(t, c.SlowLogReset(ctx).Err())

	var mostCPU time.Duration
	measure := func(call func() int) int {
		before := mainThreadCPU(t, c)
		k := call()
		mostCPU = max(mostCPU, mainThreadCPU(t, c)-before)
		return k
	}
	claimed := 0
	for {
		k := measure(func() int {
			cl, err := s.Claim(ctx, store.ClaimParams{Limit: n})
			require.NoError(t, err)
			return len(cl.Leases)
		})
		if k == 0 {
			break
		}
		assert.LessOrEqual(t, k, MaxClaim)
		claimed += k
	}
	require.Equal(t, n, claimed)
	reaped := 0
	for {
		// A reap is one read (Expired) and a short script per lease.
		var x store.ExpiredLeases
		k := measure(func() int {
			var err error
			x, err = s.Expired(ctx, n)
			require.NoError(t, err)
			return len(x.Leases)
		})
		if k == 0 {
			break
		}
		assert.LessOrEqual(t, k, MaxReap)
		for _, l := range x.Leases {
			k := measure(func() int {
				require.NoError(t, s.Retry(ctx, store.RetryParams{Lease: store.LeaseRef{ID: l.ID, Token: l.Token}, Dead: true, Expired: true}))
				return 1
			})
			reaped += k
		}
	}
	require.Equal(t, n, reaped)

	logs, err := c.SlowLogGet(ctx, -1).Result()
	require.NoError(t, err)
	var longest time.Duration
	scripts := 0
	for _, l := range logs {
		if len(l.Args) == 0 || !strings.HasPrefix(strings.ToLower(l.Args[0]), "eval") {
			continue
		}
		scripts++
		longest = max(longest, l.Duration)
	}
	require.NoError(t, c.ConfigSet(ctx, "slowlog-log-slower-than", "10000").Err())
	t.Logf("%d scripts claimed and reaped %d messages; the longest ran %v, and the most CPU a call took was %v", scripts, n, longest, mostCPU)
	assert.GreaterOrEqual(t, scripts, 2*n/MaxClaim)
	assert.Less(t, mostCPU, 20*time.Millisecond)
}

// mainThreadCPU returns the CPU time Redis's main thread has used, which
// runs the scripts.
func mainThreadCPU(t *testing.T, c *redis.Client) time.Duration {
	t.Helper()
	info, err := c.Info(ctx, "cpu").Result()
	require.NoError(t, err)
	var sum time.Duration
	found := 0
	for line := range strings.SplitSeq(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (k != "used_cpu_sys_main_thread" && k != "used_cpu_user_main_thread") {
			continue
		}
		secs, err := strconv.ParseFloat(v, 64)
		require.NoError(t, err, line)
		sum += time.Duration(secs * float64(time.Second))
		found++
	}
	require.Equal(t, 2, found, "INFO cpu has the main thread's CPU times")
	return sum
}

// setMaxReadBytes sets maxReadBytes for the test.
func setMaxReadBytes(t *testing.T, n int64) {
	old := maxReadBytes
	maxReadBytes = n
	t.Cleanup(func() { maxReadBytes = old })
}

// bigMessages returns n messages of payloads of durable.MaxPayloadLen
// bytes, IDs prefix then a number, due now.
func bigMessages(prefix string, n int) []durable.Message {
	body := bytes.Repeat([]byte("x"), durable.MaxPayloadLen)
	msgs := make([]durable.Message, n)
	for i, id := range seqIDs(prefix, n) {
		msgs[i] = durable.Message{ID: id, Payload: body}
	}
	return msgs
}

func payloadBytes(ls []store.Lease) int64 {
	var n int64
	for _, l := range ls {
		n += int64(len(l.Payload))
	}
	return n
}

// TestClaimStopsAtMaxReadBytes has 20 messages of 1 MiB due, with a cap of
// 3 MiB: each Claim of up to MaxClaim messages returns 3 MiB at most, on
// one shard as on two, until all are claimed; with a cap below the size
// of a message, a Claim returns one.
func TestClaimStopsAtMaxReadBytes(t *testing.T) {
	const n = 20
	setMaxReadBytes(t, 3<<20)
	srv := startRedis(t)
	c := srv.client(t)
	for _, s := range []*Store{openStore(t, c, "one"), openStore(t, c, "two", WithShards(2))} {
		require.NoError(t, s.Enqueue(ctx, bigMessages("m", n)))
		claimed := map[string]bool{}
		calls := 0
		for len(claimed) < n {
			calls++
			require.LessOrEqual(t, calls, n, "%s: claimed %d of %d", s.Queue(), len(claimed), n)
			cl, err := s.Claim(ctx, store.ClaimParams{Limit: MaxClaim, Lease: time.Minute})
			require.NoError(t, err)
			require.NotEmpty(t, cl.Leases, s.Queue())
			assert.LessOrEqual(t, payloadBytes(cl.Leases), maxReadBytes, s.Queue())
			if len(claimed)+len(cl.Leases) < n {
				assert.False(t, cl.NextDue.After(cl.Now), "%s: more are due, come back soon", s.Queue())
			}
			for _, l := range cl.Leases {
				assert.False(t, claimed[l.ID], "%s claimed twice", l.ID)
				claimed[l.ID] = true
				assert.Len(t, l.Payload, durable.MaxPayloadLen)
			}
		}
		assert.GreaterOrEqual(t, calls, n/3, s.Queue())
	}

	setMaxReadBytes(t, 100<<10)
	s := openStore(t, c, "small")
	require.NoError(t, s.Enqueue(ctx, bigMessages("m", 2)))
	cl, err := s.Claim(ctx, store.ClaimParams{Limit: MaxClaim, Lease: time.Minute})
	require.NoError(t, err)
	assert.Equal(t, []string{"m00000"}, ids(cl.Leases), "the first message, whatever its size")
}
