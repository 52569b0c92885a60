package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// TestPauseAcrossProcesses: two store handles on their own connections,
// as two processes, neither polling (WithSafetyPoll(0)). A pause from one
// stops the receiver of the other, a new handle sees it, and a Resume
// from the first wakes the receiver of the second at once, through the
// wake channel.
func TestPauseAcrossProcesses(t *testing.T) {
	srv := startRedis(t)
	s1 := openStore(t, srv.client(t), "q", WithSafetyPoll(0))
	s2 := openStore(t, srv.client(t), "q", WithSafetyPoll(0))
	q1, err := durable.New(s1)
	require.NoError(t, err)
	defer q1.Close()
	q2, err := durable.New(s2)
	require.NoError(t, err)
	defer q2.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	require.NoError(t, q1.Pause(ctx))
	st, err := openStore(t, srv.client(t), "q").Stats(ctx)
	require.NoError(t, err)
	assert.True(t, st.Paused, "a new handle sees the pause")
	require.NoError(t, q1.Enqueue(ctx, durable.Message{ID: "a"}), "Enqueue goes on while paused")

	got := make(chan *durable.Delivery, 1)
	go func() {
		d, err := q2.Receive(ctx)
		if err != nil {
			d = nil
		}
		got <- d
	}()
	select {
	case d := <-got:
		t.Fatalf("received %v while paused", d)
	case <-time.After(300 * time.Millisecond):
	}

	resumed := time.Now()
	require.NoError(t, q1.Resume(ctx))
	select {
	case d := <-got:
		require.NotNil(t, d)
		assert.Equal(t, "a", d.ID)
		assert.Less(t, time.Since(resumed), time.Second, "woken by the notification, promptly")
		require.NoError(t, d.Ack(ctx))
	case <-time.After(5 * time.Second):
		t.Fatal("the Resume of one process did not wake the receiver of the other")
	}
	st, err = s2.Stats(ctx)
	require.NoError(t, err)
	assert.False(t, st.Paused)
}

// TestPauseShards: every shard is paused, and resumed.
func TestPauseShards(t *testing.T) {
	srv := startRedis(t)
	s := openStore(t, srv.client(t), "q", WithShards(4))
	ctx := context.Background()
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("a", time.Time{}), msg("b", time.Time{}), msg("c", time.Time{}), msg("d", time.Time{})}))
	require.NoError(t, s.SetPaused(ctx, true))
	c, err := s.Claim(ctx, store.ClaimParams{Limit: 10, Lease: time.Minute})
	require.NoError(t, err)
	assert.True(t, c.Paused)
	assert.Empty(t, c.Leases)
	require.NoError(t, s.SetPaused(ctx, false))
	c, err = s.Claim(ctx, store.ClaimParams{Limit: 10, Lease: time.Minute})
	require.NoError(t, err)
	assert.False(t, c.Paused)
	assert.Len(t, c.Leases, 4)
}
