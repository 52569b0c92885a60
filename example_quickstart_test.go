package timingwheel_test

import (
	"fmt"
	"time"

	"github.com/seed64e23a5c/timingwheel"
)

// The README's Quick start: its code block is this function's body, and
// TestReadmeQuickStartIsExample keeps the two identical.
func Example_quickStart() {
	w, err := timingwheel.New() // 1 ms tick, 512 buckets per level
	if err != nil {
		panic(err)
	}
	w.Start()
	defer w.Stop()

	// Close the order in 30 minutes, unless it is paid first.
	order := w.AfterFunc(30*time.Minute, func() { fmt.Println("order closed: unpaid") })
	// The order was paid: Stop returns true, so the close will never run.
	fmt.Println("paid in time:", order.Stop())

	// A session expires after 30 minutes without activity; activity pushes it back.
	session := w.AfterFunc(30*time.Minute, func() { fmt.Println("session expired") })
	session.Reset(30 * time.Minute)

	// Periodic work, on cadence.
	heartbeat := w.ScheduleFunc(timingwheel.Every(15*time.Second), func() { fmt.Println("heartbeat") })
	defer heartbeat.Stop()

	// A channel timer, as time.Timer: wait at most 10 ms for a reply.
	replies := make(chan string)
	timeout := w.NewTimer(10 * time.Millisecond)
	select {
	case r := <-replies:
		fmt.Println("reply:", r)
	case <-timeout.C:
		fmt.Println("timed out")
	}
	// Output:
	// paid in time: true
	// timed out
}
