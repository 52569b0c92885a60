package durable

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel"
)

// Tests of bugs found in review, each one failing before its fix.

// endingStore is a BoltStore whose Claim ends the caller's context once
// it has claimed, as when a Receive's deadline passes during the fsync.
type endingStore struct {
	*BoltStore
	cancel context.CancelFunc
}

func (s endingStore) Claim(ctx context.Context, p ClaimParams) (Claimed, error) {
	c, err := s.BoltStore.Claim(ctx, p)
	s.cancel()
	return c, err
}

func TestReceiveHandsOutALeaseTakenAsItsContextEnds(t *testing.T) {
	mock := clock.NewMock()
	bs, err := OpenBoltStore(filepath.Join(t.TempDir(), "q.db"), WithClock(mock))
	require.NoError(t, err)
	defer bs.Close()
	ctx, cancel := context.WithCancel(context.Background())
	q, err := New(endingStore{bs, cancel}, WithClock(mock), WithMaxAttempts(1))
	require.NoError(t, err)
	defer q.Close()
	require.NoError(t, q.Enqueue(context.Background(), Message{ID: "m"}))

	d, err := q.Receive(ctx)
	require.NoError(t, err, "the lease was taken: it must be handed out")
	require.Equal(t, "m", d.ID)
	require.Error(t, ctx.Err())
	require.NoError(t, d.Ack(context.Background()))
}

func TestShorterLeaseIsReapedAtItsNewDeadline(t *testing.T) {
	q, mock, _ := testQueue(t) // visibility 30s, back-off 1s after attempt 1
	ctx := context.Background()
	require.NoError(t, q.Enqueue(ctx, Message{ID: "m"}))
	d := receive(t, q)
	require.NoError(t, d.Extend(ctx, time.Second))
	got := waitingReceive(t, q)
	mock.Add(time.Second) // the new deadline: reaped, due 1s later
	// Wait for the queue to arm its due timer from the reap's report, not
	// only for the store to show the message pending: the queue translates
	// the store's due time to a wait from its own now, so a clock moved in
	// between would move the timer too.
	require.Eventually(t, func() bool {
		if stats(t, q).Pending != 1 {
			return false
		}
		q.mu.Lock()
		defer q.mu.Unlock()
		return !q.reaping && !q.dueAt.IsZero()
	}, 5*time.Second, time.Millisecond, "the shortened lease was not reaped at its deadline")
	mock.Add(time.Second)
	select {
	case d2 := <-got:
		assert.Equal(t, 2, d2.Attempt)
	case <-time.After(5 * time.Second):
		t.Fatal("not delivered again after the shortened lease and the back-off")
	}
}

// TestWallClockStepBackLeavesNoStaleTimer runs the wheel's tasks by hand
// so that the clock steps back between the due timer firing and its task.
func TestWallClockStepBackLeavesNoStaleTimer(t *testing.T) {
	mock := clock.NewMock()
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	mock.Set(t0)
	tasks := make(chan func(), 16)
	defer close(tasks) // after w.Stop: the wheel runs no more tasks
	w, err := timingwheel.New(timingwheel.WithClock(mock), timingwheel.WithExecutor(func(f func()) { tasks <- f }))
	require.NoError(t, err)
	w.Start()
	defer w.Stop()
	q, err := Open(filepath.Join(t.TempDir(), "q.db"), WithClock(mock), WithWheel(w))
	require.NoError(t, err)
	defer q.Close()
	ctx := context.Background()
	require.NoError(t, q.Enqueue(ctx, Message{ID: "a", Due: t0.Add(10 * time.Second)}))
	mock.Add(10 * time.Second)
	require.NoError(t, w.Sync(ctx))
	mock.Set(t0.Add(9 * time.Second)) // stepped back 1s
	(<-tasks)()                       // the due timer's task
	go func() {
		for f := range tasks {
			f()
		}
	}()
	got := waitingReceive(t, q)
	mock.Add(time.Hour)
	require.NoError(t, w.Sync(ctx))
	select {
	case d := <-got:
		assert.Equal(t, "a", d.ID)
	case <-time.After(5 * time.Second):
		t.Fatalf("a message due an hour ago was not delivered: %+v", stats(t, q))
	}
}

func TestCorruptFileIsNotLeftLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q.db")
	q, err := Open(path)
	require.NoError(t, err)
	for i := range 300 {
		require.NoError(t, q.Enqueue(context.Background(), Message{ID: fmt.Sprint("m", i), Payload: make([]byte, 100)}))
	}
	require.NoError(t, q.Close())
	good, err := os.ReadFile(path)
	require.NoError(t, err)
	bad := append([]byte(nil), good...)
	for i := 2 * 4096; i < len(bad); i++ { // all but the meta pages
		bad[i] = byte(i*7 + 3)
	}
	require.NoError(t, os.WriteFile(path, bad, 0o600))
	_, err = Open(path)
	require.ErrorIs(t, err, ErrCorrupt)

	require.NoError(t, os.WriteFile(path, good, 0o600)) // restored from a backup
	q, err = Open(path, WithLockTimeout(200*time.Millisecond))
	require.NoError(t, err, "the failed Open must not keep the file locked")
	st, err := q.Stats(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 300, st.Pending)
	require.NoError(t, q.Close())
}

func TestPanickingBackoffFailsOnlyTheReap(t *testing.T) {
	mock := clock.NewMock()
	s, err := OpenBoltStore(filepath.Join(t.TempDir(), "q.db"), WithClock(mock))
	require.NoError(t, err)
	defer s.Close()
	ctx := context.Background()
	require.NoError(t, s.Enqueue(ctx, []Message{{ID: "m"}}))
	_, err = s.Claim(ctx, ClaimParams{Limit: 1, Lease: time.Second})
	require.NoError(t, err)
	mock.Add(time.Minute)
	_, err = Reap(ctx, s, 10, RetryPolicy{MaxAttempts: 10, Backoff: func(int) time.Duration { panic("boom") }})
	require.ErrorContains(t, err, "back-off function panicked")
	require.NotErrorIs(t, err, ErrCorrupt)
	require.NoError(t, s.Enqueue(ctx, []Message{{ID: "n"}}), "the store works on")
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, Stats{Pending: 1, InFlight: 1, NextDue: mock.Now()}, st)
}

func TestExponentialBackoffWithoutCap(t *testing.T) {
	f := ExponentialBackoff(time.Second, time.Duration(math.MaxInt64))
	for attempt := range 100 {
		assert.GreaterOrEqual(t, f(attempt), time.Duration(0))
	}
	g := ExponentialBackoff(time.Second, time.Minute)
	for attempt := 1; attempt < 100; attempt++ {
		d := g(attempt)
		ceil := min(time.Minute, time.Second<<min(attempt-1, 20))
		assert.True(t, d >= 0 && d <= ceil, "attempt %d: %v beyond [0, %v]", attempt, d, ceil)
	}
}
