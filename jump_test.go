package timingwheel

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Sync waits for every timer due at the call, also after the clock jumps
// past thousands of them at once (a suspended VM, a GC stall, or a mock
// clock moved in one step): 30,000 timers due 600-1000 ms ahead, the clock
// moved to 590 ms in 10 ms steps, then 410 ms in one step.
func TestSyncAfterAJumpFiresEveryDueTimer(t *testing.T) {
	w, mock := mockWheel(t)
	const n = 30000
	var fired atomic.Int64
	r := rand.New(rand.NewPCG(1, 2))
	for range n {
		d := 600*time.Millisecond + time.Duration(r.Int64N(int64(400*time.Millisecond)))
		w.AfterFunc(d, func() { fired.Add(1) })
	}
	for range 59 {
		advance(t, w, mock, 10*time.Millisecond)
	}
	require.Zero(t, fired.Load(), "fired before 590 ms")
	mock.Add(410 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, w.Sync(ctx))
	require.EqualValues(t, n, fired.Load(), "fired when Sync returned")
	require.Zero(t, w.Len())
}
