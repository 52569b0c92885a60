package durable

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// claimCounter counts the claims made on its store.
type claimCounter struct {
	Store
	claims atomic.Int64
}

func (s *claimCounter) Claim(ctx context.Context, p ClaimParams) (Claimed, error) {
	s.claims.Add(1)
	return s.Store.Claim(ctx, p)
}

// TestAWakeUpWakesOneReceiverPerMessage: with 16 receivers waiting, k
// messages cost about k claims, not 16 each.
func TestAWakeUpWakesOneReceiverPerMessage(t *testing.T) {
	mock := clock.NewMock()
	bs, err := OpenBoltStore(filepath.Join(t.TempDir(), "q.db"), WithClock(mock))
	require.NoError(t, err)
	defer bs.Close()
	s := &claimCounter{Store: bs}
	q, err := New(s, WithClock(mock), withClaimAhead(0))
	require.NoError(t, err)
	defer q.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	const receivers = 16
	got := make(chan *Delivery, receivers)
	for range receivers {
		go func() {
			if d, err := q.Receive(ctx); err == nil {
				got <- d
			}
		}()
	}
	require.Eventually(t, func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return q.waiting == receivers
	}, 5*time.Second, time.Millisecond)
	// Each Never has its own baseline: testify's last poll of a Never may
	// still be running when it returns, so its closure's variables must not
	// be written after.
	beforeOne := s.claims.Load()

	require.NoError(t, q.Enqueue(ctx, Message{ID: "one"}))
	d := <-got
	assert.Equal(t, "one", d.ID)
	require.Never(t, func() bool { return s.claims.Load()-beforeOne > 1 }, 100*time.Millisecond, 5*time.Millisecond,
		"one message woke more than one receiver")

	// Three messages due at once, by the timer: about three claims.
	due := mock.Now().Add(time.Second)
	for _, id := range []string{"a", "b", "c"} {
		require.NoError(t, q.Enqueue(ctx, Message{ID: id, Due: due}))
	}
	beforeThree := s.claims.Load()
	mock.Add(time.Second)
	for range 3 {
		select {
		case <-got:
		case <-time.After(5 * time.Second):
			t.Fatal("not every due message was received")
		}
	}
	require.Never(t, func() bool { return s.claims.Load()-beforeThree > 4 }, 100*time.Millisecond, 5*time.Millisecond,
		"three messages cost %d claims", s.claims.Load()-beforeThree)
}

// TestWakeUpOfAReceiverThatGaveUpGoesToAnother: a receiver woken as its
// context ends either takes the wake-up or passes it on; it is never lost.
func TestWakeUpOfAReceiverThatGaveUpGoesToAnother(t *testing.T) {
	q, _, _ := testQueue(t)
	passedOn := 0
	for range 50 {
		q.mu.Lock()
		q.woken = false
		q.mu.Unlock()
		ctx, cancel := context.WithCancel(context.Background())
		result := make(chan error, 1)
		go func() { result <- q.await(ctx) }()
		require.Eventually(t, func() bool {
			q.mu.Lock()
			defer q.mu.Unlock()
			return len(q.waiters) == 1
		}, 5*time.Second, time.Millisecond)
		q.mu.Lock()
		cancel()
		q.wakeOneLocked() // woken as it gives up
		q.mu.Unlock()
		err := <-result
		q.mu.Lock()
		woken := q.woken
		q.mu.Unlock()
		if err == nil {
			assert.False(t, woken, "taken and kept")
			continue
		}
		require.ErrorIs(t, err, context.Canceled)
		assert.True(t, woken, "the wake-up was lost")
		passedOn++
	}
	t.Logf("passed on %d times in 50", passedOn)
}
