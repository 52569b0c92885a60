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

// clockStepStore steps the mock clock once, after its first claim has
// read the clock and before the claim returns: the store's now and the
// queue's, read after the call, then differ by the step.
type clockStepStore struct {
	*BoltStore
	mock *clock.Mock
	step time.Duration
	once sync.Once
}

func (s *clockStepStore) Claim(ctx context.Context, p ClaimParams) (Claimed, error) {
	c, err := s.BoltStore.Claim(ctx, p)
	s.once.Do(func() { s.mock.Add(s.step) })
	return c, err
}

// TestClaimOnTheQueuesClockKeepsItsInstants: a store on the queue's clock
// (the file) gives due times and deadlines the queue keeps as they are,
// however far the clock moves during the claim. Converting them by the
// two nows would hold the message until a step after its due time, and
// put the deadline a step late.
func TestClaimOnTheQueuesClockKeepsItsInstants(t *testing.T) {
	bs, mock := mockBoltStore(t)
	const step = 40 * time.Millisecond
	q, err := New(&clockStepStore{BoltStore: bs, mock: mock, step: step},
		WithClock(mock), withClaimAhead(claimAhead), WithVisibilityTimeout(time.Minute))
	require.NoError(t, err)
	defer q.Close()
	ctx := context.Background()
	due := mock.Now().Add(step) // claimed ahead, and due once the claim returns
	require.NoError(t, q.Enqueue(ctx, Message{ID: "a", Due: due}))

	// The clock does not move again. A Receive that holds a message
	// waits for its due time whatever its context says: Close ends it.
	got := make(chan received, 1)
	go func() {
		d, err := q.Receive(ctx)
		got <- received{d, err}
	}()
	select {
	case r := <-got:
		require.NoError(t, r.err)
		assert.Equal(t, "a", r.d.ID)
		assert.True(t, r.d.Deadline.Equal(due.Add(time.Minute)), "deadline %v, due %v", r.d.Deadline, due)
		require.NoError(t, r.d.Ack(ctx))
	case <-time.After(5 * time.Second):
		t.Error("the message due at the claim's return was held past its due time")
		require.NoError(t, q.Close())
		<-got
	}
}

func TestSameClock(t *testing.T) {
	m1, m2 := clock.NewMock(), clock.NewMock()
	assert.True(t, sameClock(clock.New(), clock.New()), "the system's clock")
	assert.True(t, sameClock(m1, m1))
	assert.False(t, sameClock(m1, m2), "two mocks")
	assert.False(t, sameClock(m1, clock.New()))
	assert.False(t, sameClock(clock.New(), m1))
}

// TestLocalClockStores: the stores on a clock of this process say which
// (LocalClock), and a queue on the same clock keeps their instants.
func TestLocalClockStores(t *testing.T) {
	mock := clock.NewMock()
	s, err := OpenBoltStore(filepath.Join(t.TempDir(), "q.db"), WithClock(mock))
	require.NoError(t, err)
	defer s.Close()
	assert.Same(t, mock, s.Clock())
	assert.True(t, onStoreClock(s, mock))
	assert.False(t, onStoreClock(s, clock.NewMock()), "another mock")
	assert.False(t, onStoreClock(struct{ Store }{s}, mock), "a store that does not say")
}
