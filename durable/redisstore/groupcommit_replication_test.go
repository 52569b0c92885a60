//go:build unix

package redisstore

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// TestGroupCommitWaitsOncePerBatch: WithReplicas, a batch of several calls
// waits for the replicas once (one WAIT), and when they do not confirm,
// every call of the batch returns ErrNotReplicated.
func TestGroupCommitWaitsOncePerBatch(t *testing.T) {
	primary, _ := startReplicated(t)
	c := primary.client(t)
	s := openStore(t, c, "q", WithReplicas(1, 5*time.Second))
	require.NoError(t, s.Enqueue(ctx, []durable.Message{{ID: "warm-up"}}))
	var mu sync.Mutex
	var waits int
	c.AddHook(cmdHook(func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
		if strings.EqualFold(cmd.Name(), "wait") {
			mu.Lock()
			waits++
			mu.Unlock()
		}
		return next(ctx, cmd)
	}))
	g := newScriptGate(enqueueScript)
	c.AddHook(g.hook())
	b := &s.commits[0].enqueue
	first := goErr(func() error { return s.Enqueue(ctx, []durable.Message{{ID: "a"}}) })
	g.next(t)
	var queued []<-chan error
	for i := range 3 {
		queued = append(queued, goErr(func() error { return s.Enqueue(ctx, []durable.Message{{ID: fmt.Sprint("b", i)}}) }))
		waitQueued(t, b, i+1)
	}
	g.release <- struct{}{}
	require.NoError(t, <-first)
	ids, _ := enqueueArgIDs(g.next(t))
	assert.Len(t, ids, 3)
	g.release <- struct{}{}
	for _, ch := range queued {
		require.NoError(t, <-ch)
	}
	mu.Lock()
	assert.Equal(t, 2, waits, "one WAIT per script call")
	mu.Unlock()

	// A replica that never confirms: each call of the batch fails.
	s2 := openStore(t, c, "q", WithReplicas(2, 50*time.Millisecond))
	b2 := &s2.commits[0].enqueue
	first = goErr(func() error { return s2.Enqueue(ctx, []durable.Message{{ID: "c"}}) })
	g.next(t)
	queued = queued[:0]
	for i := range 2 {
		queued = append(queued, goErr(func() error { return s2.Enqueue(ctx, []durable.Message{{ID: fmt.Sprint("d", i)}}) }))
		waitQueued(t, b2, i+1)
	}
	g.release <- struct{}{}
	require.ErrorIs(t, <-first, ErrNotReplicated)
	g.next(t)
	g.release <- struct{}{}
	for _, ch := range queued {
		require.ErrorIs(t, <-ch, ErrNotReplicated)
	}
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 8, st.Pending, "written on the primary all the same")
}
