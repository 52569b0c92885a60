package redisstore

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/internal/durablebench"
)

// TestScriptsAreShort has a backlog of 20,000 messages come due at once,
// and checks in Redis's slow log that no script ran long: each claims or
// reaps at most MaxClaim or MaxReap of them.
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

	claimed := 0
	for {
		cl, err := s.Claim(ctx, n, 0)
		require.NoError(t, err)
		if len(cl.Leases) == 0 {
			break
		}
		assert.LessOrEqual(t, len(cl.Leases), MaxClaim)
		claimed += len(cl.Leases)
	}
	require.Equal(t, n, claimed)
	reaped := 0
	for {
		r, err := s.Reap(ctx, n, durable.RetryPolicy{MaxAttempts: 1})
		require.NoError(t, err)
		if r.Dead == 0 {
			break
		}
		assert.LessOrEqual(t, r.Dead, MaxReap)
		reaped += r.Dead
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
	t.Logf("%d scripts claimed and reaped %d messages; the longest ran %v", scripts, n, longest)
	assert.GreaterOrEqual(t, scripts, 2*n/MaxClaim)
	// A script of 500 messages takes 1 to 3 ms; the bound leaves room
	// for a loaded machine.
	assert.Less(t, longest, 100*time.Millisecond)
}
