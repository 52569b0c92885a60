package durable

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// receiveAsync receives in a goroutine; the channel gets the delivery, or
// nil on an error.
func receiveAsync(ctx context.Context, q *Queue) <-chan *Delivery {
	got := make(chan *Delivery, 1)
	go func() {
		d, err := q.Receive(ctx)
		if err != nil {
			d = nil
		}
		got <- d
	}()
	return got
}

// waitWaiting waits until n receivers of q wait for a wake-up.
func waitWaiting(t *testing.T, q *Queue, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return q.waiting == n
	}, 5*time.Second, time.Millisecond)
}

// TestPauseBlocksReceiveUntilResume: a paused queue hands nothing out,
// and Resume wakes the receiver at once, the mock clock standing still:
// it waited for a wake-up, not for a timer.
func TestPauseBlocksReceiveUntilResume(t *testing.T) {
	q, _, _ := testQueue(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	require.NoError(t, q.Pause(ctx))
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.True(t, st.Paused)
	require.NoError(t, q.Enqueue(ctx, Message{ID: "a"}), "Enqueue goes on while paused")
	got := receiveAsync(ctx, q)
	waitWaiting(t, q, 1)
	select {
	case d := <-got:
		t.Fatalf("received %v while paused", d)
	case <-time.After(100 * time.Millisecond):
	}
	q.mu.Lock()
	assert.True(t, q.dueAt.IsZero(), "no due timer armed while paused")
	q.mu.Unlock()

	require.NoError(t, q.Resume(ctx))
	select {
	case d := <-got:
		require.NotNil(t, d)
		assert.Equal(t, "a", d.ID)
		require.NoError(t, d.Ack(ctx))
	case <-time.After(5 * time.Second):
		t.Fatal("Resume did not wake the receiver")
	}
	st, err = q.Stats(ctx)
	require.NoError(t, err)
	assert.False(t, st.Paused)
}

// TestPauseStopsRunWithinOneWakeUp: Run takes no new message once the
// queue is paused, and takes them again on Resume.
func TestPauseStopsRunWithinOneWakeUp(t *testing.T) {
	q, _, _ := testQueue(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var handled []string
	done := make(chan error, 1)
	go func() {
		done <- q.Run(ctx, 2, func(ctx context.Context, d *Delivery) error {
			mu.Lock()
			handled = append(handled, d.ID)
			mu.Unlock()
			return nil
		})
	}()
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(handled) }
	require.NoError(t, q.Enqueue(ctx, Message{ID: "before"}))
	require.Eventually(t, func() bool { return count() == 1 }, 5*time.Second, time.Millisecond)

	require.NoError(t, q.Pause(ctx))
	for _, id := range []string{"a", "b", "c"} {
		require.NoError(t, q.Enqueue(ctx, Message{ID: id}))
	}
	require.Never(t, func() bool { return count() > 1 }, 200*time.Millisecond, 5*time.Millisecond,
		"Run handled a message while paused")
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, st.Pending)

	require.NoError(t, q.Resume(ctx))
	require.Eventually(t, func() bool { return count() == 4 }, 5*time.Second, time.Millisecond)
	cancel()
	require.NoError(t, <-done)
}

// TestPauseGivesBackClaimedAhead: a message claimed ahead before the
// pause is not handed out at its due time: its Confirm fails with
// ErrPaused and the queue gives it back, pending at its due time. After
// Resume it is delivered, its first claim counted.
func TestPauseGivesBackClaimedAhead(t *testing.T) {
	q, mock, _ := testQueue(t, withClaimAhead(claimAhead))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	due := mock.Now().Add(30 * time.Millisecond)
	require.NoError(t, q.Enqueue(ctx, Message{ID: "a", Due: due}))
	got := receiveAsync(ctx, q)
	require.Eventually(t, func() bool { return q.heldAhead([]Message{{ID: "a"}})["a"] != nil }, 5*time.Second, time.Millisecond,
		"the receiver holds a, claimed ahead")

	require.NoError(t, q.Pause(ctx))
	mock.Add(30 * time.Millisecond) // a is due: the receiver confirms, and is refused
	require.Eventually(t, func() bool {
		info, err := q.Get(ctx, "a")
		return err == nil && info.State == Pending
	}, 5*time.Second, time.Millisecond, "given back")
	info, err := q.Get(ctx, "a")
	require.NoError(t, err)
	assert.True(t, due.Equal(info.Due), "pending at its due time again: %v", info.Due)
	assert.Equal(t, 0, info.Attempt, "never handed out: no attempt counted")
	assert.Empty(t, info.LastError)
	waitWaiting(t, q, 1)
	select {
	case d := <-got:
		t.Fatalf("received %v while paused", d)
	case <-time.After(50 * time.Millisecond):
	}

	require.NoError(t, q.Resume(ctx))
	select {
	case d := <-got:
		require.NotNil(t, d)
		assert.Equal(t, "a", d.ID)
		assert.Equal(t, 1, d.Attempt, "the first hand-out")
	case <-time.After(5 * time.Second):
		t.Fatal("Resume did not wake the receiver")
	}
}

// TestResumeWakesTheQueuesOfTheStore: two queues on one BoltStore in one
// process; a Resume through one wakes the receiver of the other, which
// waits for no timer.
func TestResumeWakesTheQueuesOfTheStore(t *testing.T) {
	mock := clock.NewMock()
	bs, err := OpenBoltStore(filepath.Join(t.TempDir(), "q.db"), WithClock(mock))
	require.NoError(t, err)
	defer bs.Close()
	q1, err := New(bs, WithClock(mock), withClaimAhead(0))
	require.NoError(t, err)
	defer q1.Close()
	q2, err := New(bs, WithClock(mock), withClaimAhead(0))
	require.NoError(t, err)
	defer q2.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	require.NoError(t, q1.Pause(ctx))
	require.NoError(t, q1.Enqueue(ctx, Message{ID: "a"}))
	got := receiveAsync(ctx, q2)
	waitWaiting(t, q2, 1)
	select {
	case d := <-got:
		t.Fatalf("q2 received %v while paused", d)
	case <-time.After(50 * time.Millisecond):
	}
	require.NoError(t, q1.Resume(ctx))
	select {
	case d := <-got:
		require.NotNil(t, d)
		assert.Equal(t, "a", d.ID)
	case <-time.After(5 * time.Second):
		t.Fatal("q1's Resume did not wake q2's receiver")
	}
}

// TestPauseHoldsAcrossRestarts: the flag is in the file.
func TestPauseHoldsAcrossRestarts(t *testing.T) {
	q, mock, path := testQueue(t)
	ctx := context.Background()
	require.NoError(t, q.Enqueue(ctx, Message{ID: "a"}))
	require.NoError(t, q.Pause(ctx))
	require.NoError(t, q.Close())

	q, err := Open(path, WithClock(mock), withClaimAhead(0))
	require.NoError(t, err)
	defer q.Close()
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.True(t, st.Paused, "paused after a restart")
	noneDue(t, q)
	require.NoError(t, q.Resume(ctx))
	d, err := q.Receive(ctx)
	require.NoError(t, err)
	assert.Equal(t, "a", d.ID)
}
