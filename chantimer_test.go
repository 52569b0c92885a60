package timingwheel

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func heapAlloc() int64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// Promise 5: channel timers the program no longer references are
// garbage-collected while pending, as Go's TestTimerGC checks for
// time.After: 40,000 abandoned selects keep nothing after a collection.
func TestUnreferencedChannelTimersAreCollected(t *testing.T) {
	const n = 40000
	w, _ := mockWheel(t) // the mock clock never reaches their deadline
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	runtime.GC()
	before := heapAlloc()
	for i := range n {
		if i%2 == 0 {
			select {
			case <-w.After(time.Hour):
				t.Fatal("fired early")
			case <-ctx.Done():
			}
		} else {
			_ = w.NewTimer(time.Hour)
		}
	}
	// Collections during the loop may have freed some already; cleanups
	// run after a collection, in their own goroutine.
	require.Eventually(t, func() bool {
		runtime.GC()
		return w.Len() == 0
	}, 10*time.Second, 10*time.Millisecond)
	runtime.GC()
	retained := heapAlloc() - before
	assert.Less(t, retained, int64(n*48), "%d bytes kept for %d abandoned timers", retained, n)
}

// The wheel keeps a channel timer while C is referenced, even when its
// Timer is not (After), and an AfterFunc timer always.
func TestReferencedTimersSurviveCollection(t *testing.T) {
	w, mock := mockWheel(t)
	c := w.After(5 * time.Millisecond)
	kept := w.NewTimer(5 * time.Millisecond)
	fired := make(chan struct{})
	w.AfterFunc(5*time.Millisecond, func() { close(fired) })
	for range 3 {
		runtime.GC()
	}
	assert.Equal(t, 3, w.Len())
	advance(t, w, mock, 5*time.Millisecond)
	select {
	case at := <-c:
		assert.Equal(t, mock.Now(), at)
	default:
		t.Fatal("After's channel received nothing")
	}
	select {
	case <-kept.C:
	default:
		t.Fatal("NewTimer's channel received nothing")
	}
	<-fired
	assert.Zero(t, w.Len())

	// Stop and Reset of a handle reach the timer the wheel holds.
	kept.Reset(time.Millisecond)
	runtime.GC()
	assert.Equal(t, 1, w.Len())
	assert.True(t, kept.Stop())
	assert.Zero(t, w.Len())
}

// A program may assign C on any Timer, as on a time.Timer (Go's own timer
// tests do so on AfterFunc timers): the timer stays an AfterFunc timer,
// and Stop, Reset and ResetAt treat it as one.
func TestAssigningCOnAnAfterFuncTimer(t *testing.T) {
	w, mock := mockWheel(t)
	var runs atomic.Int32
	tm := w.AfterFunc(time.Hour, func() { runs.Add(1) })
	c := make(chan time.Time, 1)
	tm.C = c
	assert.True(t, tm.Stop())
	assert.False(t, tm.Stop())
	assert.False(t, tm.Reset(time.Millisecond))
	assert.True(t, tm.ResetAt(mock.Now().Add(2*time.Millisecond)))
	advance(t, w, mock, 2*time.Millisecond)
	assert.EqualValues(t, 1, runs.Load(), "the task ran once, at the deadline ResetAt set")
	assert.Empty(t, c, "nothing is sent on a C the program assigned")
	assert.False(t, tm.Stop())
}
