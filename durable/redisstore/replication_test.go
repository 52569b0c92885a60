//go:build unix

// The replication tests stop a replica with SIGSTOP: Unix only.

package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// startReplicated starts a primary and a replica of it, on loopback
// ports, and waits until the replica is in sync.
func startReplicated(t *testing.T) (primary, replica *redisServer) {
	t.Helper()
	primary = startRedisTCP(t)
	replica = startRedisTCP(t, "--replicaof", "127.0.0.1", strconv.Itoa(primary.port))
	c := replica.client(t)
	require.Eventually(t, func() bool {
		info, err := c.Info(context.Background(), "replication").Result()
		return err == nil && strings.Contains(info, "master_link_status:up")
	}, 20*time.Second, 10*time.Millisecond, "the replica does not sync")
	return primary, replica
}

// promote makes the replica a primary, as a failover does.
func promote(t *testing.T, replica *redisServer) *redis.Client {
	t.Helper()
	c := replica.client(t)
	require.NoError(t, c.Do(context.Background(), "REPLICAOF", "NO", "ONE").Err())
	return c
}

// TestFailoverKeepsWritesConfirmedByReplicas: with WithReplicas(1, ...),
// the primary is killed right after the last write returned, and the
// replica promoted: every Enqueue that returned nil is there, and every
// Ack that returned nil stays acked.
func TestFailoverKeepsWritesConfirmedByReplicas(t *testing.T) {
	primary, replica := startReplicated(t)
	pc := primary.client(t)
	s := openStore(t, pc, "q", WithReplicas(1, 5*time.Second))
	const n = 300
	var msgs []durable.Message
	for i := range n {
		msgs = append(msgs, durable.Message{ID: fmt.Sprintf("m%03d", i), Payload: []byte("p")})
	}
	for i := range n {
		require.NoError(t, s.Enqueue(ctx, msgs[i:i+1]))
	}
	require.NoError(t, s.Enqueue(ctx, []durable.Message{{ID: "batch-a"}, {ID: "batch-b"}}))
	acked := map[string]bool{}
	for range n / 2 {
		c, err := s.Claim(ctx, store.ClaimParams{Limit: 1, Lease: time.Minute})
		require.NoError(t, err)
		require.Len(t, c.Leases, 1)
		l := c.Leases[0]
		require.NoError(t, s.Ack(ctx, store.LeaseRef{ID: l.ID, Token: l.Token}))
		acked[l.ID] = true
	}
	primary.kill() // at once: no time to replicate anything late
	rc := promote(t, replica)

	s2 := openStore(t, rc, "q")
	st, err := s2.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, durable.Stats{Pending: n - n/2 + 2, NextDue: st.NextDue}, st)
	c, err := s2.Claim(ctx, store.ClaimParams{Limit: MaxClaim, Lease: time.Minute})
	require.NoError(t, err)
	got := map[string]bool{}
	for _, l := range c.Leases {
		assert.False(t, acked[l.ID], "%s was acked, and came back after the failover", l.ID)
		got[l.ID] = true
	}
	for _, m := range msgs {
		if !acked[m.ID] {
			assert.True(t, got[m.ID], "%s was enqueued, and lost in the failover", m.ID)
		}
	}
	assert.True(t, got["batch-a"] && got["batch-b"])
}

// TestWritesFailWhenReplicasDoNotConfirm: a replica that does not answer
// (stopped) makes every write return ErrNotReplicated after the timeout.
func TestWritesFailWhenReplicasDoNotConfirm(t *testing.T) {
	primary, replica := startReplicated(t)
	s := openStore(t, primary.client(t), "q", WithReplicas(1, 200*time.Millisecond))
	require.NoError(t, s.Enqueue(ctx, []durable.Message{{ID: "a"}}))

	require.NoError(t, replica.cmd.Process.Signal(syscall.SIGSTOP))
	defer func() { _ = replica.cmd.Process.Signal(syscall.SIGCONT) }()
	began := time.Now()
	err := s.Enqueue(ctx, []durable.Message{{ID: "b"}})
	require.ErrorIs(t, err, ErrNotReplicated)
	assert.GreaterOrEqual(t, time.Since(began), 200*time.Millisecond)
	_, err = s.Claim(ctx, store.ClaimParams{Limit: 1, Lease: time.Minute})
	require.ErrorIs(t, err, ErrNotReplicated)
	_, err = s.Cancel(ctx, "b")
	require.ErrorIs(t, err, ErrNotReplicated)
	st, err := s.Stats(ctx)
	require.NoError(t, err, "a read does not wait for replicas")
	assert.Equal(t, 1, st.InFlight, "the claim is done on the primary")

	require.NoError(t, replica.cmd.Process.Signal(syscall.SIGCONT))
	require.Eventually(t, func() bool {
		return s.Enqueue(ctx, []durable.Message{{ID: "c"}}) == nil
	}, 10*time.Second, 50*time.Millisecond, "writes confirm again once the replica is back")
}

func TestWithReplicasChecks(t *testing.T) {
	s, _, _ := newTestStore(t)
	_, err := New(s.client, "q", WithReplicas(-1, 0))
	require.Error(t, err)
	// No replica at all: every write fails at once with a timeout.
	s2 := openStore(t, s.client, "q", WithReplicas(1, 50*time.Millisecond))
	require.ErrorIs(t, s2.Enqueue(ctx, []durable.Message{{ID: "a"}}), ErrNotReplicated)
}
