package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// Two store handles of one queue, as two processes, neither polling: a
// pause from one stops the receiver of the other, a new handle sees it,
// and a Resume from the first wakes the receiver of the second at once,
// through the resume's notification.
func TestPauseAcrossProcesses(t *testing.T) {
	pool := testPool(t)
	queue := freshQueue()
	s1 := openStore(t, pool, queue, WithSafetyPoll(0))
	s2 := openStore(t, pool, queue, WithSafetyPoll(0))
	q1 := newQueue(t, s1)
	q2 := newQueue(t, s2)
	c, cancel := context.WithCancel(ctx)
	defer cancel()

	require.NoError(t, q1.Pause(c))
	st, err := openStore(t, pool, queue).Stats(c)
	require.NoError(t, err)
	assert.True(t, st.Paused, "a new handle sees the pause")
	require.NoError(t, q1.Enqueue(c, durable.Message{ID: "a"}), "Enqueue goes on while paused")
	require.Eventually(t, func() bool { return s2.wake.listening.Load() == 1 }, 10*time.Second, time.Millisecond,
		"the second handle listens")

	got := make(chan *durable.Delivery, 1)
	go func() {
		d, err := q2.Receive(c)
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
	require.NoError(t, q1.Resume(c))
	select {
	case d := <-got:
		require.NotNil(t, d)
		assert.Equal(t, "a", d.ID)
		assert.Less(t, time.Since(resumed), 2*time.Second, "woken by the notification, promptly")
		require.NoError(t, d.Ack(c))
	case <-time.After(10 * time.Second):
		t.Fatal("the Resume of one process did not wake the receiver of the other")
	}
	st, err = s2.Stats(c)
	require.NoError(t, err)
	assert.False(t, st.Paused)
}

// The flag is per queue: pausing one queue of the schema leaves the
// others receiving.
func TestPauseIsPerQueue(t *testing.T) {
	pool := testPool(t)
	a, b := openStore(t, pool, freshQueue()), openStore(t, pool, freshQueue())
	require.NoError(t, a.SetPaused(ctx, true))
	require.NoError(t, b.Enqueue(ctx, []durable.Message{{ID: "x"}}))
	c, err := b.Claim(ctx, store.ClaimParams{Limit: 1, Lease: time.Minute})
	require.NoError(t, err)
	assert.False(t, c.Paused)
	assert.Len(t, c.Leases, 1)
	st, err := a.Stats(ctx)
	require.NoError(t, err)
	assert.True(t, st.Paused)
}
