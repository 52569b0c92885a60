package queue_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/seed64e23a5c/timingwheel"
	"github.com/seed64e23a5c/timingwheel/queue"
)

// Order timeouts: each new order is offered with a 30-minute delay, a paid
// order is removed, and a consumer closes the orders that stay unpaid.
//
// A mock clock makes the example run at once: the wheel and the queue
// share it, and the example moves it forward, calling Sync so that the
// timers due have fired before it goes on. A program would use the real
// clock: queue.New[string]() and nothing else.
func Example_orderTimeout() {
	mock := clock.NewMock()
	start := mock.Now()
	wheel, err := timingwheel.New(
		timingwheel.WithClock(mock),
		timingwheel.WithExecutor(func(task func()) { task() }),
	)
	if err != nil {
		panic(err)
	}
	wheel.Start()
	defer wheel.Stop()
	orders := queue.New[string](queue.WithWheel(wheel), queue.WithClock(mock))

	// advance moves the clock, a minute at a time.
	advance := func(d time.Duration) {
		for ; d > 0; d -= time.Minute {
			mock.Add(time.Minute)
			if err := wheel.Sync(context.Background()); err != nil {
				panic(err)
			}
		}
	}

	place := func(id, customer string) {
		if err := orders.Offer(id, customer, 30*time.Minute); err != nil {
			panic(err)
		}
		fmt.Printf("%v placed %s\n", mock.Since(start), id)
	}
	pay := func(id string) {
		if orders.Remove(id) {
			fmt.Printf("%v paid %s\n", mock.Since(start), id)
		} else {
			fmt.Printf("%v payment for %s refused: order closed\n", mock.Since(start), id)
		}
	}

	// The consumer closes each order that came due unpaid, until the
	// queue is closed.
	closed := make(chan string)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			it, err := orders.Take(context.Background())
			if errors.Is(err, queue.ErrClosed) {
				return
			}
			closed <- fmt.Sprintf("%v closed %s of %s, unpaid since %v",
				mock.Since(start), it.Key, it.Value, it.Due.Add(-30*time.Minute).Sub(start))
		}
	}()

	place("order-1", "ada")
	place("order-2", "bob")
	advance(5 * time.Minute)
	place("order-3", "cy")
	pay("order-2")
	advance(10 * time.Minute)
	place("order-4", "dee")
	advance(15 * time.Minute) // order-1 comes due
	fmt.Println(<-closed)
	advance(3 * time.Minute)
	pay("order-3") // just in time
	pay("order-1") // too late
	advance(7 * time.Minute)

	// Shut down: what is still pending is handed back.
	for _, it := range orders.Close() {
		fmt.Printf("%v still pending at shutdown: %s, due at %v\n", mock.Since(start), it.Key, it.Due.Sub(start))
	}
	<-done

	// Output:
	// 0s placed order-1
	// 0s placed order-2
	// 5m0s placed order-3
	// 5m0s paid order-2
	// 15m0s placed order-4
	// 30m0s closed order-1 of ada, unpaid since 0s
	// 33m0s paid order-3
	// 33m0s payment for order-1 refused: order closed
	// 40m0s still pending at shutdown: order-4, due at 45m0s
}
