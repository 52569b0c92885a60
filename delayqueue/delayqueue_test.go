package delayqueue_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/seed64e23a5c/timingwheel/delayqueue"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// poll runs dq.Poll until the test ends.
func poll(t *testing.T, dq *delayqueue.DelayQueue, nowF func() int64) {
	exit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		dq.Poll(exit, nowF)
	}()
	t.Cleanup(func() { close(exit); wg.Wait() })
}

func receive(t *testing.T, dq *delayqueue.DelayQueue) interface{} {
	t.Helper()
	select {
	case v := <-dq.C:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("nothing received")
		return nil
	}
}

func TestDueElementsComeEarliestFirstThenInOfferOrder(t *testing.T) {
	dq := delayqueue.New(4)
	dq.Offer("c", 30)
	dq.Offer("a", 10)
	dq.Offer("b1", 20)
	dq.Offer("b2", 20)
	dq.Offer("b3", 20)
	require.Equal(t, 5, dq.Len())
	poll(t, dq, func() int64 { return 30 })
	var got []interface{}
	for range 5 {
		got = append(got, receive(t, dq))
	}
	assert.Equal(t, []interface{}{"a", "b1", "b2", "b3", "c"}, got)
	assert.Zero(t, dq.Len())
}

// An element is never sent before its expiration on the clock Poll reads,
// and an earlier element offered while Poll sleeps comes first.
func TestNeverBeforeExpiration(t *testing.T) {
	dq := delayqueue.New(0)
	start := time.Now()
	nowMs := func() int64 { return time.Since(start).Milliseconds() }
	poll(t, dq, nowMs)
	dq.Offer("late", 60)
	dq.Offer("early", 20) // wakes Poll, which was sleeping until 60
	for _, want := range []string{"early", "late"} {
		v := receive(t, dq)
		at := nowMs()
		require.Equal(t, want, v)
		if want == "early" {
			assert.GreaterOrEqual(t, at, int64(20))
		} else {
			assert.GreaterOrEqual(t, at, int64(60))
		}
	}
}

// Closing exitC while Poll waits for a receiver puts the element back.
func TestExitKeepsTheElementInFlight(t *testing.T) {
	dq := delayqueue.New(1)
	dq.Offer("x", 0)
	var now atomic.Int64
	exit := make(chan struct{})
	done := make(chan struct{})
	go func() { dq.Poll(exit, now.Load); close(done) }()
	require.Eventually(t, func() bool { return dq.Len() == 0 }, 5*time.Second, time.Millisecond, "Poll took the element")
	close(exit)
	<-done
	assert.Equal(t, 1, dq.Len())
	poll(t, dq, now.Load)
	assert.Equal(t, "x", receive(t, dq))
}

func TestNegativeSize(t *testing.T) {
	dq := delayqueue.New(-1)
	dq.Offer(1, 0)
	assert.Equal(t, 1, dq.Len())
}
