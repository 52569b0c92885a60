package leasetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// LargeEnqueueAlone checks that an Enqueue of n messages (the size from
// which s's calls make their own round trip) is written while the round
// trip of a small call is held, and that a small call made meanwhile
// still waits to share one. s holds no message. started is closed when
// the first small call's round trip is held; release lets it go, and may
// be called again; waiting reports how many calls wait for a shared round
// trip.
func LargeEnqueueAlone(t *testing.T, s store.Store, n int, started <-chan struct{}, release func(), waiting func() int) {
	t.Helper()
	ctx := context.Background()
	t.Cleanup(release) // before the store closes, if the test fails early
	pending := func() int {
		t.Helper()
		st, err := s.Stats(ctx)
		require.NoError(t, err)
		return st.Pending
	}

	large := make([]store.Message, n)
	for i := range large {
		large[i] = store.Message{ID: fmt.Sprint("large ", i)}
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	assert.Equal(t, context.Canceled, s.Enqueue(ended, large),
		"a large call with its context ended returns the context's error, as a shared one does")

	first := make(chan error, 1)
	go func() { first <- s.Enqueue(ctx, []store.Message{{ID: "small"}}) }()
	<-started
	second := make(chan error, 1)
	go func() { second <- s.Enqueue(ctx, []store.Message{{ID: "small too"}}) }()
	require.Eventually(t, func() bool { return waiting() == 1 }, 10*time.Second, time.Millisecond,
		"a small call waits for the one held")

	waited, stop := context.WithTimeout(ctx, 5*time.Second)
	defer stop()
	require.NoError(t, s.Enqueue(waited, large), "the large call waited for the held one")
	assert.Equal(t, n, pending(), "the large call is written, the small ones not yet")
	assert.Equal(t, 1, waiting())

	release()
	require.NoError(t, <-first)
	require.NoError(t, <-second)
	assert.Equal(t, n+2, pending())
}
