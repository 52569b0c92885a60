package redisstore

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/internal/durablebench"
)

// countHook counts the commands a client sends, or with trips its round
// trips (a pipeline or transaction counts once).
type countHook struct {
	n     *atomic.Int64
	trips bool
}

func (h countHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.trips {
			h.n.Add(1)
		} else {
			h.n.Add(int64(len(cmds)))
		}
		return next(ctx, cmds)
	}
}

// serverStats are counters of INFO.
type serverStats struct {
	commands int64         // total_commands_processed, script commands included
	cpu      time.Duration // used_cpu_sys + used_cpu_user
}

func readServerStats(t testing.TB, c redis.UniversalClient) serverStats {
	t.Helper()
	info, err := c.Info(context.Background(), "stats", "cpu").Result()
	require.NoError(t, err)
	var st serverStats
	for line := range strings.Lines(info) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch k {
		case "total_commands_processed":
			st.commands, _ = strconv.ParseInt(v, 10, 64)
		case "used_cpu_sys", "used_cpu_user":
			f, _ := strconv.ParseFloat(v, 64)
			st.cpu += time.Duration(f * float64(time.Second))
		}
	}
	return st
}

// idleConsumers starts n consumers of queue, each with a client, store and
// queue of its own, as n processes would have, and one goroutine blocked
// in Receive. It returns the count of commands their clients send, and a
// function that stops them and fails the test if any received something.
func idleConsumers(t testing.TB, srv *redisServer, queue string, n int) (*atomic.Int64, func()) {
	t.Helper()
	sent := new(atomic.Int64)
	rctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var queues []*durable.Queue
	var got atomic.Int64
	for range n {
		c := srv.newClient()
		c.AddHook(countHook{n: sent})
		s, err := New(c, queue)
		require.NoError(t, err)
		q, err := durable.New(s)
		require.NoError(t, err)
		queues = append(queues, q)
		wg.Go(func() {
			defer c.Close()
			defer s.Close()
			for {
				if _, err := q.Receive(rctx); err != nil {
					if !errors.Is(err, context.Canceled) && !errors.Is(err, durable.ErrClosed) {
						t.Error(err)
					}
					return
				}
				got.Add(1)
			}
		})
	}
	return sent, func() {
		cancel()
		for _, q := range queues {
			_ = q.Close()
		}
		wg.Wait()
		assert.Zero(t, got.Load(), "nothing is due")
	}
}

// TestIdleCommands has ten idle consumers wait while a million messages
// are pending (10,000 with -short; REDISSTORE_IDLE_MESSAGES sets another
// count), none due for a day, and counts the commands Redis receives: at
// most 20 a second in all.
func TestIdleCommands(t *testing.T) {
	n := 1_000_000
	if v := os.Getenv("REDISSTORE_IDLE_MESSAGES"); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(t, err)
	} else if testing.Short() {
		n = 10_000
	}
	window := 10 * time.Second
	if testing.Short() {
		window = 5 * time.Second
	}
	srv := startRedis(t)
	c := srv.client(t)
	s := openStore(t, c, "idle")
	due := redisNow(t, c).Add(24 * time.Hour)
	loaded := time.Now()
	require.NoError(t, durablebench.PreloadStore(ctx, s, "m", n, 100, func(int) time.Time { return due }))
	mem, err := c.InfoMap(ctx, "memory").Result()
	require.NoError(t, err)
	t.Logf("%d messages loaded in %v; Redis uses %s", n, time.Since(loaded), mem["Memory"]["used_memory_human"])

	sent, stop := idleConsumers(t, srv, "idle", 10)
	defer stop()
	time.Sleep(time.Second) // they claim once, subscribe, and wait
	sent0, before := sent.Load(), readServerStats(t, c)
	time.Sleep(window)
	sent1, after := sent.Load(), readServerStats(t, c)

	secs := window.Seconds()
	clientRate := float64(sent1-sent0) / secs
	// The delta counts the second INFO, and every command the scripts
	// call.
	serverRate := float64(after.commands-before.commands-1) / secs
	cpu := after.cpu - before.cpu
	t.Logf("10 idle consumers, %d messages pending: %.1f commands/s sent, %.1f commands/s processed by Redis (script commands included), Redis CPU %v/s (%.2f%%)",
		n, clientRate, serverRate, cpu/time.Duration(secs), 100*cpu.Seconds()/secs)
	assert.LessOrEqual(t, clientRate, 20.0)
	assert.LessOrEqual(t, serverRate, 20.0)
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, n, st.Pending)
}
