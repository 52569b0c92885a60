// Go's tests of time.AfterFunc, time.After and time.Timer, ported from the
// time package of Go 1.26 (src/time/sleep_test.go) to timers made on a
// TimingWheel. Copyright 2009 The Go Authors. All rights reserved. Use of
// this source code is governed by a BSD-style license that can be found in
// Go's LICENSE file.
//
// The assertions are Go's, unchanged; the ports make their timers on a
// wheel (see gotick_test.go, which holds the ticker tests of sleep_test.go
// and TestChan). Left out, as they test what the wheel does not have or
// deliberately does otherwise:
//   - TestSleep, TestSleepZeroDeadlock and TestOverflowPeriodRuntimeTimer:
//     time.Sleep and the runtime's timers, not the wheel's.
//   - TestZeroTimerResetPanics, TestZeroTimerStopPanics and TestIssue5745:
//     Stop and Reset on a zero Timer or a nil *Timer return false rather
//     than panicking (see the README's "From time.Timer and time.Ticker").

package timingwheel_test

import (
	"errors"
	"fmt"
	"math/rand"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	. "time"

	"github.com/seed64e23a5c/timingwheel"
)

// newTimerFuncOn returns Go's newTimerFunc on tw.
//
// newTimerFunc simulates NewTimer using AfterFunc,
// but this version will not hit the special cases for channels
// that are used when calling NewTimer.
// This makes it easy to test both paths.
func newTimerFuncOn(tw *timingwheel.TimingWheel) func(d Duration) *timingwheel.Timer {
	return func(d Duration) *timingwheel.Timer {
		c := make(chan Time, 1)
		t := tw.AfterFunc(d, func() { c <- Now() })
		t.C = c
		return t
	}
}

// adjustDelay is Go's for a system that sleeps to about 1ms or better, as
// Linux, macOS and the BSDs do (Go adjusts the delay on Windows alone, by
// a runtime variable a package outside the runtime cannot read).
func adjustDelay(t *testing.T, delay Duration) Duration {
	return delay
}

// Test the basic function calling behavior. Correct queuing
// behavior is tested elsewhere, since After and AfterFunc share
// the same code.
func TestAfterFunc(t *testing.T) {
	tw := goWheel(t)
	i := 10
	c := make(chan bool)
	var f func()
	f = func() {
		i--
		if i >= 0 {
			tw.AfterFunc(0, f)
			Sleep(1 * Second)
		} else {
			c <- true
		}
	}

	tw.AfterFunc(0, f)
	<-c
}

func TestAfterFuncStarvation(t *testing.T) {
	tw := goWheel(t)
	// Start two goroutines ping-ponging on a channel send.
	// At any given time, at least one of these goroutines is runnable:
	// if the channel buffer is full, the receiver is runnable,
	// and if it is not full, the sender is runnable.
	//
	// In addition, the AfterFunc callback should become runnable after
	// the indicated delay.
	//
	// Even if GOMAXPROCS=1, we expect the runtime to eventually schedule
	// the AfterFunc goroutine instead of the runnable channel goroutine.
	// However, in https://go.dev/issue/65178 this was observed to live-lock
	// on wasip1/wasm and js/wasm after <10000 runs.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))

	var (
		wg   sync.WaitGroup
		stop atomic.Bool
		c    = make(chan bool, 1)
	)

	wg.Add(2)
	go func() {
		for !stop.Load() {
			c <- true
		}
		close(c)
		wg.Done()
	}()
	go func() {
		for range c {
		}
		wg.Done()
	}()

	tw.AfterFunc(1*Microsecond, func() { stop.Store(true) })
	wg.Wait()
}

func TestAfter(t *testing.T) {
	tw := goWheel(t)
	const delay = 100 * Millisecond
	start := Now()
	end := <-tw.After(delay)
	delayadj := adjustDelay(t, delay)
	if duration := Since(start); duration < delayadj {
		t.Fatalf("After(%s) slept for only %d ns", delay, duration)
	}
	if min := start.Add(delayadj); end.Before(min) {
		t.Fatalf("After(%s) expect >= %s, got %s", delay, min, end)
	}
}

func TestAfterTick(t *testing.T) {
	t.Parallel()
	tw := goWheel(t)
	const Count = 10
	Delta := 100 * Millisecond
	if testing.Short() {
		Delta = 10 * Millisecond
	}
	t0 := Now()
	for i := 0; i < Count; i++ {
		<-tw.After(Delta)
	}
	t1 := Now()
	d := t1.Sub(t0)
	target := Delta * Count
	if d < target*9/10 {
		t.Fatalf("%d ticks of %s too fast: took %s, expected %s", Count, Delta, d, target)
	}
	if !testing.Short() && d > target*30/10 {
		t.Fatalf("%d ticks of %s too slow: took %s, expected %s", Count, Delta, d, target)
	}
}

func TestAfterStop(t *testing.T) {
	tw := goWheel(t)
	t.Run("impl=chan", func(t *testing.T) {
		testAfterStop(t, tw, tw.NewTimer)
	})
	t.Run("impl=func", func(t *testing.T) {
		testAfterStop(t, tw, newTimerFuncOn(tw))
	})
}

func testAfterStop(t *testing.T, tw *timingwheel.TimingWheel, newTimer func(Duration) *timingwheel.Timer) {
	// We want to test that we stop a timer before it runs.
	// We also want to test that it didn't run after a longer timer.
	// Since we don't want the test to run for too long, we don't
	// want to use lengthy times. That makes the test inherently flaky.
	// So only report an error if it fails five times in a row.

	var errs []string
	logErrs := func() {
		for _, e := range errs {
			t.Log(e)
		}
	}

	for i := 0; i < 5; i++ {
		tw.AfterFunc(100*Millisecond, func() {})
		t0 := newTimer(50 * Millisecond)
		c1 := make(chan bool, 1)
		t1 := tw.AfterFunc(150*Millisecond, func() { c1 <- true })
		c2 := tw.After(200 * Millisecond)
		if !t0.Stop() {
			errs = append(errs, "failed to stop event 0")
			continue
		}
		if !t1.Stop() {
			errs = append(errs, "failed to stop event 1")
			continue
		}
		<-c2
		select {
		case <-t0.C:
			errs = append(errs, "event 0 was not stopped")
			continue
		case <-c1:
			errs = append(errs, "event 1 was not stopped")
			continue
		default:
		}
		if t1.Stop() {
			errs = append(errs, "Stop returned true twice")
			continue
		}

		// Test passed, so all done.
		if len(errs) > 0 {
			t.Logf("saw %d errors, ignoring to avoid flakiness", len(errs))
			logErrs()
		}

		return
	}

	t.Errorf("saw %d errors", len(errs))
	logErrs()
}

func TestAfterQueuing(t *testing.T) {
	tw := goWheel(t)
	newTimerFunc := newTimerFuncOn(tw)
	t.Run("impl=chan", func(t *testing.T) {
		testAfterQueuing(t, tw, tw.After)
	})
	t.Run("impl=func", func(t *testing.T) {
		testAfterQueuing(t, tw, func(d Duration) <-chan Time { return newTimerFunc(d).C })
	})
}

func testAfterQueuing(t *testing.T, tw *timingwheel.TimingWheel, after func(Duration) <-chan Time) {
	// This test flakes out on some systems,
	// so we'll try it a few times before declaring it a failure.
	const attempts = 5
	err := errors.New("!=nil")
	for i := 0; i < attempts && err != nil; i++ {
		delta := Duration(20+i*50) * Millisecond
		if err = testAfterQueuing1(tw, delta, after); err != nil {
			t.Logf("attempt %v failed: %v", i, err)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

var slots = []int{5, 3, 6, 6, 6, 1, 1, 2, 7, 9, 4, 8, 0}

type afterResult struct {
	slot int
	t    Time
}

func await(slot int, result chan<- afterResult, ac <-chan Time) {
	result <- afterResult{slot, <-ac}
}

// As Go's, it calls After (here tw.After) rather than after.
func testAfterQueuing1(tw *timingwheel.TimingWheel, delta Duration, after func(Duration) <-chan Time) error {
	// make the result channel buffered because we don't want
	// to depend on channel queuing semantics that might
	// possibly change in the future.
	result := make(chan afterResult, len(slots))

	t0 := Now()
	for _, slot := range slots {
		go await(slot, result, tw.After(Duration(slot)*delta))
	}
	var order []int
	var times []Time
	for range slots {
		r := <-result
		order = append(order, r.slot)
		times = append(times, r.t)
	}
	for i := range order {
		if i > 0 && order[i] < order[i-1] {
			return fmt.Errorf("After calls returned out of order: %v", order)
		}
	}
	for i, t := range times {
		dt := t.Sub(t0)
		target := Duration(order[i]) * delta
		if dt < target-delta/2 || dt > target+delta*10 {
			return fmt.Errorf("After(%s) arrived at %s, expected [%s,%s]", target, dt, target-delta/2, target+delta*10)
		}
	}
	return nil
}

func TestTimerStopStress(t *testing.T) {
	if testing.Short() {
		return
	}
	t.Parallel()
	tw := goWheel(t)
	for i := 0; i < 100; i++ {
		go func(i int) {
			timer := tw.AfterFunc(2*Second, func() {
				t.Errorf("timer %d was not stopped", i)
			})
			Sleep(1 * Second)
			timer.Stop()
		}(i)
	}
	Sleep(3 * Second)
}

func testReset(tw *timingwheel.TimingWheel, d Duration) error {
	t0 := tw.NewTimer(2 * d)
	Sleep(d)
	if !t0.Reset(3 * d) {
		return errors.New("resetting unfired timer returned false")
	}
	Sleep(2 * d)
	select {
	case <-t0.C:
		return errors.New("timer fired early")
	default:
	}
	Sleep(2 * d)
	select {
	case <-t0.C:
	default:
		return errors.New("reset timer did not fire")
	}

	if t0.Reset(50 * Millisecond) {
		return errors.New("resetting expired timer returned true")
	}
	return nil
}

func TestReset(t *testing.T) {
	tw := goWheel(t)
	// We try to run this test with increasingly larger multiples
	// until one works so slow, loaded hardware isn't as flaky,
	// but without slowing down fast machines unnecessarily.
	//
	// (maxDuration is several orders of magnitude longer than we
	// expect this test to actually take on a fast, unloaded machine.)
	d := 1 * Millisecond
	const maxDuration = 10 * Second
	for {
		err := testReset(tw, d)
		if err == nil {
			break
		}
		d *= 2
		if d > maxDuration {
			t.Error(err)
		}
		t.Logf("%v; trying duration %v", err, d)
	}
}

// Test that sleeping (via Sleep or Timer) for an interval so large it
// overflows does not result in a short sleep duration. Nor does it interfere
// with execution of other timers. If it does, timers in this or subsequent
// tests may not fire.
//
// Go's starts a goroutine that calls Sleep(big) and panics if it returns:
// time.Sleep is not the wheel's, and the goroutine would outlive the test.
func TestOverflowSleep(t *testing.T) {
	tw := goWheel(t)
	const big = Duration(int64(1<<63 - 1))

	select {
	case <-tw.After(big):
		t.Fatalf("big timeout fired")
	case <-tw.After(25 * Millisecond):
		// OK
	}

	const neg = Duration(-1 << 63)
	Sleep(neg) // Returns immediately.
	select {
	case <-tw.After(neg):
		// OK
	case <-tw.After(1 * Second):
		t.Fatalf("negative timeout didn't fire")
	}
}

// Test that zero duration timers aren't missed by the scheduler. Regression test for issue 44868.
func TestZeroTimer(t *testing.T) {
	tw := goWheel(t)
	newTimerFunc := newTimerFuncOn(tw)
	t.Run("impl=chan", func(t *testing.T) {
		testZeroTimer(t, tw.NewTimer)
	})
	t.Run("impl=func", func(t *testing.T) {
		testZeroTimer(t, newTimerFunc)
	})
	t.Run("impl=cache", func(t *testing.T) {
		timer := newTimerFunc(Hour)
		testZeroTimer(t, func(d Duration) *timingwheel.Timer {
			timer.Reset(d)
			return timer
		})
	})
}

func testZeroTimer(t *testing.T, newTimer func(Duration) *timingwheel.Timer) {
	if testing.Short() {
		t.Skip("-short")
	}

	for i := 0; i < 1000000; i++ {
		s := Now()
		ti := newTimer(0)
		<-ti.C
		if diff := Since(s); diff > 2*Second {
			t.Errorf("Expected time to get value from Timer channel in less than 2 sec, took %v", diff)
		}
	}
}

// Test that rapidly moving a timer earlier doesn't cause it to get dropped.
// Issue 47329.
func TestTimerModifiedEarlier(t *testing.T) {
	tw := goWheel(t)
	newTimerFunc := newTimerFuncOn(tw)

	past := Until(Unix(0, 0))
	count := 1000
	fail := 0
	for i := 0; i < count; i++ {
		timer := newTimerFunc(Hour)
		for j := 0; j < 10; j++ {
			if !timer.Stop() {
				<-timer.C
			}
			timer.Reset(past)
		}

		deadline := tw.NewTimer(10 * Second)
		defer deadline.Stop()
		now := Now()
		select {
		case <-timer.C:
			if since := Since(now); since > 8*Second {
				t.Errorf("timer took too long (%v)", since)
				fail++
			}
		case <-deadline.C:
			t.Error("deadline expired")
		}
	}

	if fail > 0 {
		t.Errorf("%d failures", fail)
	}
}

// Test that rapidly moving timers earlier and later doesn't cause
// some of the sleep times to be lost.
// Issue 47762
func TestAdjustTimers(t *testing.T) {
	tw := goWheel(t)
	newTimerFunc := newTimerFuncOn(tw)
	var rnd = rand.New(rand.NewSource(Now().UnixNano()))

	timers := make([]*timingwheel.Timer, 100)
	states := make([]int, len(timers))
	indices := rnd.Perm(len(timers))

	for len(indices) != 0 {
		var ii = rnd.Intn(len(indices))
		var i = indices[ii]

		var timer = timers[i]
		var state = states[i]
		states[i]++

		switch state {
		case 0:
			timers[i] = newTimerFunc(0)

		case 1:
			<-timer.C // Timer is now idle.

		// Reset to various long durations, which we'll cancel.
		case 2:
			if timer.Reset(1 * Minute) {
				panic("shouldn't be active (1)")
			}
		case 4:
			if timer.Reset(3 * Minute) {
				panic("shouldn't be active (3)")
			}
		case 6:
			if timer.Reset(2 * Minute) {
				panic("shouldn't be active (2)")
			}

		// Stop and drain a long-duration timer.
		case 3, 5, 7:
			if !timer.Stop() {
				t.Logf("timer %d state %d Stop returned false", i, state)
				<-timer.C
			}

		// Start a short-duration timer we expect to select without blocking.
		case 8:
			if timer.Reset(0) {
				t.Fatal("timer.Reset returned true")
			}
		case 9:
			now := Now()
			<-timer.C
			dur := Since(now)
			if dur > 750*Millisecond {
				t.Errorf("timer %d took %v to complete", i, dur)
			}

		// Timer is done. Swap with tail and remove.
		case 10:
			indices[ii] = indices[len(indices)-1]
			indices = indices[:len(indices)-1]
		}
	}
}

func TestStopResult(t *testing.T) {
	testStopResetResult(t, true)
}

func TestResetResult(t *testing.T) {
	testStopResetResult(t, false)
}

// Test that when racing between running a timer and stopping a timer Stop
// consistently indicates whether a value can be read from the channel.
// Issue #69312.
//
// Go's runs it under GODEBUG asynctimerchan=0, 1 and 2; the wheel has
// only the Go 1.23 channels of asynctimerchan=0 (see TestChan).
func testStopResetResult(t *testing.T, testStop bool) {
	tw := goWheel(t)

	stopOrReset := func(timer *timingwheel.Timer) bool {
		if testStop {
			return timer.Stop()
		} else {
			return timer.Reset(1 * Hour)
		}
	}

	start := make(chan struct{})
	var wg sync.WaitGroup
	const N = 1000
	wg.Add(N)
	for range N {
		go func() {
			defer wg.Done()
			<-start
			for j := 0; j < 100; j++ {
				timer1 := tw.NewTimer(1 * Millisecond)
				timer2 := tw.NewTimer(1 * Millisecond)
				select {
				case <-timer1.C:
					if !stopOrReset(timer2) {
						// The test fails if this
						// channel read times out.
						<-timer2.C
					}
				case <-timer2.C:
					if !stopOrReset(timer1) {
						// The test fails if this
						// channel read times out.
						<-timer1.C
					}
				}
			}
		}()
	}
	close(start)
	wg.Wait()
}

// Test having a large number of goroutines wake up a timer simultaneously.
// This used to trigger a crash when run under x/tools/cmd/stress.
func TestMultiWakeupTimer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	tw := goWheel(t)

	goroutines := runtime.GOMAXPROCS(0)
	timer := tw.NewTimer(Nanosecond)
	var wg sync.WaitGroup
	wg.Add(goroutines)
	for range goroutines {
		go func() {
			defer wg.Done()
			for range 10000 {
				select {
				case <-timer.C:
				default:
				}
				timer.Reset(Nanosecond)
			}
		}()
	}
	wg.Wait()
}
