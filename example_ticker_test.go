package timingwheel_test

import (
	"context"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/seed64e23a5c/timingwheel"
)

func ExampleTimingWheel_NewTicker() {
	// A mock clock makes the ticks visible instantly; a real program
	// leaves WithClock out.
	mock := clock.NewMock()
	w, _ := timingwheel.New(timingwheel.WithClock(mock))
	w.Start()
	defer w.Stop()

	start := mock.Now()
	ticker := w.NewTicker(10 * time.Second)
	defer ticker.Stop()
	step := func(d time.Duration) {
		mock.Add(d)
		_ = w.Sync(context.Background())
	}
	for range 3 {
		step(10 * time.Second)
		fmt.Println("tick at", (<-ticker.C).Sub(start))
	}

	// C holds one tick: a reader that falls behind finds the first tick it
	// missed, not a burst; the ones after it were dropped, and the cadence
	// stays on multiples of 10s.
	step(25 * time.Second)
	fmt.Println("read 25s late: tick at", (<-ticker.C).Sub(start), "and", len(ticker.C), "more")
	step(5 * time.Second)
	fmt.Println("tick at", (<-ticker.C).Sub(start))

	// Reset drops any tick left and restarts the cadence from now.
	step(9 * time.Second)
	ticker.Reset(time.Minute)
	step(10 * time.Second)
	fmt.Println("ticks 10s after Reset:", len(ticker.C))
	step(50 * time.Second)
	fmt.Println("tick at", (<-ticker.C).Sub(start))
	// Output:
	// tick at 10s
	// tick at 20s
	// tick at 30s
	// read 25s late: tick at 40s and 0 more
	// tick at 1m0s
	// ticks 10s after Reset: 0
	// tick at 2m9s
}
