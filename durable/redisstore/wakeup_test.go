package redisstore

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// TestQueueCloseReleasesWakeups: a queue's channel of Wakeups goes with
// its Close, however many queues came and went on the store.
func TestQueueCloseReleasesWakeups(t *testing.T) {
	s, _, _ := newTestStore(t)
	keep, err := durable.New(s)
	require.NoError(t, err)
	defer keep.Close()
	require.Eventually(t, func() bool { return s.wake.subscribers() == 1 }, 5*time.Second, time.Millisecond)
	for range 100 {
		q, err := durable.New(s)
		require.NoError(t, err)
		require.NoError(t, q.Close())
	}
	assert.Equal(t, 1, s.wake.subscribers())
	require.NoError(t, keep.Close())
	assert.Equal(t, 0, s.wake.subscribers())
}

// countingStore counts the claims made on its store, and keeps its
// notifications.
type countingStore struct {
	*Store
	claims atomic.Int64
}

func (s *countingStore) Claim(ctx context.Context, p store.ClaimParams) (store.Claimed, error) {
	s.claims.Add(1)
	return s.Store.Claim(ctx, p)
}

// TestNotificationWakesOneReceiver: a message enqueued by another process
// wakes one of the 16 receivers waiting here: one claim (two if the
// subscription's own wake-up comes meanwhile), not 16.
func TestNotificationWakesOneReceiver(t *testing.T) {
	srv := startRedis(t)
	c := srv.client(t)
	producer := openStore(t, c, "q")
	s := &countingStore{Store: openStore(t, c, "q", WithSafetyPoll(0))}
	q, err := durable.New(s)
	require.NoError(t, err)
	defer q.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const receivers = 16
	got := make(chan *durable.Delivery, receivers)
	for range receivers {
		go func() {
			if d, err := q.Receive(ctx); err == nil {
				got <- d
			}
		}()
	}
	// Every receiver has claimed once and waits. The wake-up of the
	// subscription itself may come later, and cost one claim more.
	require.Eventually(t, func() bool { return s.claims.Load() >= receivers }, 5*time.Second, time.Millisecond)
	before := s.claims.Load()
	require.NoError(t, producer.Enqueue(ctx, []durable.Message{{ID: "one"}}))
	select {
	case d := <-got:
		assert.Equal(t, "one", d.ID)
	case <-time.After(5 * time.Second):
		t.Fatal("not woken")
	}
	require.Never(t, func() bool { return s.claims.Load()-before > 2 }, 200*time.Millisecond, 5*time.Millisecond,
		"one notification cost %d claims", s.claims.Load()-before)
}
