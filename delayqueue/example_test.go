package delayqueue_test

import (
	"fmt"
	"time"

	"github.com/seed64e23a5c/timingwheel/delayqueue"
)

func ExampleDelayQueue() {
	dq := delayqueue.New(16)
	start := time.Now()
	nowMs := func() int64 { return time.Since(start).Milliseconds() }
	exit := make(chan struct{})
	defer close(exit)
	go dq.Poll(exit, nowMs)

	dq.Offer("second", 20)
	dq.Offer("first", 10)
	fmt.Println(<-dq.C)
	fmt.Println(<-dq.C)
	// Output:
	// first
	// second
}
