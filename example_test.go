package timingwheel_test

import (
	"context"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/seed64e23a5c/timingwheel"
)

func ExampleTimingWheel_AfterFunc() {
	w, err := timingwheel.New() // 1ms tick
	if err != nil {
		panic(err)
	}
	w.Start()
	defer w.Stop()

	paid := w.AfterFunc(30*time.Minute, func() { fmt.Println("never printed") })
	fmt.Println("paid in time:", paid.Stop())
	done := make(chan struct{})
	w.AfterFunc(10*time.Millisecond, func() {
		fmt.Println("order 42 closed: unpaid")
		close(done)
	})
	<-done
	// Output:
	// paid in time: true
	// order 42 closed: unpaid
}

func ExampleTimingWheel_ScheduleFunc() {
	// A mock clock makes the schedule visible instantly; a real program
	// leaves WithClock out.
	mock := clock.NewMock()
	w, _ := timingwheel.New(timingwheel.WithClock(mock), timingwheel.WithExecutor(func(task func()) { task() }))
	w.Start()
	defer w.Stop()

	start := mock.Now()
	t := w.ScheduleFunc(timingwheel.Every(15*time.Second), func() {
		fmt.Println("heartbeat at", mock.Now().Sub(start))
	})
	for range 8 {
		mock.Add(5 * time.Second)
		_ = w.Sync(context.Background())
	}
	t.Stop()
	// Output:
	// heartbeat at 15s
	// heartbeat at 30s
}

func ExampleTimer_Reset() {
	mock := clock.NewMock()
	w, _ := timingwheel.New(timingwheel.WithClock(mock), timingwheel.WithExecutor(func(task func()) { task() }))
	w.Start()
	defer w.Stop()

	start := mock.Now()
	// A session that expires after 30 minutes without activity.
	session := w.AfterFunc(30*time.Minute, func() {
		fmt.Println("session expired after", mock.Now().Sub(start))
	})
	for range 3 {
		mock.Add(20 * time.Minute)
		_ = w.Sync(context.Background())
		fmt.Println("activity; was pending:", session.Reset(30*time.Minute))
	}
	mock.Add(30 * time.Minute)
	_ = w.Sync(context.Background())
	// Output:
	// activity; was pending: true
	// activity; was pending: true
	// activity; was pending: true
	// session expired after 1h30m0s
}

func ExampleTimingWheel_NewTimer() {
	w, _ := timingwheel.New()
	w.Start()
	defer w.Stop()

	results := make(chan string)
	go func() {
		time.Sleep(5 * time.Millisecond)
		results <- "fast reply"
	}()

	timeout := w.NewTimer(time.Second)
	defer timeout.Stop()
	for range 2 {
		select {
		case r := <-results:
			fmt.Println(r)
			// Wait at most 20ms for the next reply.
			timeout.Reset(20 * time.Millisecond)
		case <-timeout.C:
			fmt.Println("timed out")
		}
	}
	// Output:
	// fast reply
	// timed out
}

func Example_deadlineAccuracy() {
	// A wheel on the real clock fires each timer after its deadline, never
	// before, and on an idle Linux machine within a fraction of a
	// millisecond of it: it wakes on a timerfd rather than only on a
	// runtime timer.
	w, err := timingwheel.New(timingwheel.WithExecutor(func(task func()) { task() }))
	if err != nil {
		panic(err)
	}
	w.Start()
	defer w.Stop()

	deadline := time.Now().Add(3 * time.Millisecond)
	fired := make(chan time.Duration, 1)
	w.AfterFuncAt(deadline, func() { fired <- time.Since(deadline) })
	late := <-fired
	fmt.Println("fired after its deadline:", late >= 0)
	// Output:
	// fired after its deadline: true
}

func ExampleTimingWheel_Shutdown() {
	w, err := timingwheel.New()
	if err != nil {
		panic(err)
	}
	w.Start()

	sent := make(chan struct{})
	w.AfterFunc(time.Millisecond, func() {
		close(sent)
		time.Sleep(20 * time.Millisecond) // a reminder e-mail on its way
		fmt.Println("reminder sent")
	})
	<-sent

	// At exit: stop firing, and give the tasks under way 5s to finish.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fmt.Println("shutdown:", w.Shutdown(ctx))
	// Output:
	// reminder sent
	// shutdown: <nil>
}
