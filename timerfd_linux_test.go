package timingwheel

import (
	"context"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openFDs counts the process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(entries)
}

func syncWheel(t *testing.T, w *TimingWheel) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, w.Sync(ctx))
}

func TestWakeupSignalsNoSoonerThanArmed(t *testing.T) {
	tfd := newTimerfd()
	require.NotNil(t, tfd)
	defer tfd.close()
	tfd.setDeadline(10 * time.Second) // so that a missing expiry fails the test
	for _, d := range []time.Duration{200 * time.Microsecond, 2 * time.Millisecond} {
		t0 := time.Now()
		tfd.arm(d)
		require.True(t, tfd.wait(), "no expiry %v after arming for %v", time.Since(t0), d)
		assert.GreaterOrEqual(t, time.Since(t0), d)
	}
	// Arming again replaces the earlier setting.
	tfd.arm(time.Hour)
	t0 := time.Now()
	tfd.arm(time.Millisecond)
	require.True(t, tfd.wait(), "the later arming did not replace the earlier one")
	assert.GreaterOrEqual(t, time.Since(t0), time.Millisecond)
}

// An expiry that came before a wait began ends it at once, whichever
// goroutine's poll saw it first: the wait reads the fd once its instant
// has passed.
func TestWakeupExpiryBeforeTheWaitEndsItAtOnce(t *testing.T) {
	tfd := newTimerfd()
	require.NotNil(t, tfd)
	defer tfd.close()
	for range 20 {
		tfd.setDeadline(10 * time.Second) // so that a missed expiry fails the test
		tfd.arm(100 * time.Microsecond)
		time.Sleep(2 * time.Millisecond) // it expires; other Ps' polls may see it
		t0 := time.Now()
		require.True(t, tfd.wait(), "an expiry before the wait was missed")
		assert.Less(t, time.Since(t0), 5*time.Second, "the wait ended at once, not at the deadline")
	}
}

// A wait that begins before the instant reads nothing until the poller
// reports the expiry; an expiry that no wait took may end the next wait
// early, a spurious wake-up, but it never hides a later expiry.
func TestWakeupExpiryNobodyWaitedForHidesNoLaterOne(t *testing.T) {
	tfd := newTimerfd()
	require.NotNil(t, tfd)
	defer tfd.close()
	tfd.setDeadline(10 * time.Second) // so that a hidden expiry fails the test
	tfd.arm(100 * time.Microsecond)
	time.Sleep(2 * time.Millisecond) // it expires, and nothing waits
	t0 := time.Now()
	tfd.arm(2 * time.Millisecond)
	for spurious := 0; ; spurious++ {
		require.True(t, tfd.wait(), "the expiry 2ms after the second arming did not end a wait")
		if time.Since(t0) >= 2*time.Millisecond {
			break
		}
		require.Zero(t, spurious, "more than one wait ended early: only the first expiry could")
	}
}

// A wake, from any goroutine, ends a wait at once, whatever the fd was
// armed for; the read deadline is the backstop when nothing expires.
func TestWakeupPokeAndDeadline(t *testing.T) {
	tfd := newTimerfd()
	require.NotNil(t, tfd)
	defer tfd.close()
	tfd.arm(time.Hour)
	tfd.setDeadline(10 * time.Second)
	t0 := time.Now()
	go tfd.wake()
	assert.False(t, tfd.wait(), "a wake, not an expiry, ended the wait")
	assert.Less(t, time.Since(t0), 5*time.Second, "the wake ended the wait, not the deadline")

	tfd.arm(time.Hour)
	t0 = time.Now()
	tfd.setDeadline(5 * time.Millisecond)
	assert.False(t, tfd.wait(), "the deadline, not an expiry, ended the wait")
	assert.GreaterOrEqual(t, time.Since(t0), 5*time.Millisecond)
}

// Each started wheel on the real clock owns one file descriptor, its
// timerfd, until Stop; a wheel not started, or on a mock clock, owns none.
func TestWheelOwnsOneFDFromStartToStop(t *testing.T) {
	before := openFDs(t)
	const n = 30
	wheels := make([]*TimingWheel, n)
	for i := range wheels {
		w, err := New()
		require.NoError(t, err)
		w.AfterFunc(time.Hour, func() {}) // so that its driver waits on the timerfd
		wheels[i] = w
	}
	assert.Equal(t, before, openFDs(t), "wheels not started")
	for _, w := range wheels {
		w.Start()
		syncWheel(t, w) // its driver has made its sleeper
	}
	assert.Equal(t, before+n, openFDs(t), "one per started wheel")

	for range 10 {
		w, _ := mockWheel(t)
		syncWheel(t, w)
	}
	assert.Equal(t, before+n, openFDs(t), "none for a wheel on a mock clock")

	for _, w := range wheels {
		w.Stop() // while its driver waits on its timerfd
	}
	assert.Equal(t, before, openFDs(t), "Stop closes it")
}

// clock.New() passed by WithClock is the real clock: the wheel wakes on
// its timerfd, as with no WithClock.
func TestWithClockNewIsTheRealClock(t *testing.T) {
	before := openFDs(t)
	w, err := New(WithClock(clock.New()))
	require.NoError(t, err)
	assert.True(t, w.realClock)
	w.Start()
	syncWheel(t, w)
	assert.Equal(t, before+1, openFDs(t))
	w.Stop()
	assert.Equal(t, before, openFDs(t))

	w, err = New(WithClock(clock.NewMock()))
	require.NoError(t, err)
	assert.False(t, w.realClock)
}

// An sleeper on the real clock arms its timerfd for the instant; once a
// wake-up came late (the program is busy) it also sets the timerfd's read
// deadline a backup interval later, for busyWaits waits: the fd wakes an
// idle program, the deadline's runtime timer one whose Ps are too busy to
// poll the fd. While wake-ups come on time it sets no deadline. Each goes
// off once; the sleeper then sets it again.
func TestAlarmSetsTheDeadlineWhileWakeupsComeLate(t *testing.T) {
	const backup = 5 * time.Millisecond
	var now atomic.Int64 // the sleeper's clock, moved by hand
	a := newSleeper(clock.New(), now.Load, true, backup)
	defer a.close()
	require.NotNil(t, a.tfd, "this system gives a timerfd")

	target := int64(time.Millisecond)
	a.set(target, time.Millisecond)
	assert.True(t, a.armed, "timerfd armed")
	assert.False(t, a.deadlineOn, "no deadline for an idle program")
	now.Store(target) // woken on time
	a.wait(nil)
	assert.False(t, a.armed, "the timerfd went off")
	assert.Zero(t, a.busy, "a wake-up on time")

	target += int64(time.Millisecond)
	a.set(target, time.Millisecond)
	assert.False(t, a.deadlineOn, "still no deadline")
	now.Store(target + int64(backup)) // woken a whole backup interval late
	a.wait(nil)
	assert.Equal(t, busyWaits, a.busy, "a late wake-up")

	target += int64(time.Millisecond)
	a.set(target, time.Millisecond)
	assert.True(t, a.armed, "timerfd armed")
	assert.True(t, a.deadlineOn, "deadline set after a late wake-up")
	now.Store(target)
	a.wait(nil)
	assert.False(t, a.armed, "the timerfd went off")
	assert.True(t, a.deadlineOn, "the deadline is still set")
	assert.Equal(t, busyWaits-1, a.busy, "one wait of the busy ones used")
	t0 := time.Now()
	a.wait(nil) // nothing armed now: the deadline ends it
	assert.False(t, a.deadlineOn, "the deadline passed")
	assert.Less(t, time.Since(t0), 10*time.Second)

	for a.busy > 0 {
		a.tfd.wake() // ends the wait at once
		a.wait(nil)
	}
	target += int64(time.Millisecond)
	now.Store(0)
	a.set(target, time.Millisecond)
	assert.False(t, a.deadlineOn, "no deadline once the busy waits are used up")
}

// Kicks are never lost: a timer that makes a new earliest bucket, and a
// Sync, wake a driver that sleeps until a bucket an hour away, however
// they race with the driver setting its sleeper (which replaces a wake of
// the timerfd made just before). A lost wake would leave a timer waiting
// for the hour.
func TestKicksAreNeverLost(t *testing.T) {
	w, err := New()
	require.NoError(t, err)
	w.Start()
	defer w.Stop()
	w.AfterFunc(time.Hour, func() {})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for i := range 500 {
				if i%10 == 0 {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					assert.NoError(t, w.Sync(ctx), "Sync was not served")
					cancel()
					continue
				}
				fired := make(chan struct{})
				w.AfterFunc(time.Duration(r.Int64N(int64(300*time.Microsecond))), func() { close(fired) })
				select {
				case <-fired:
				case <-time.After(5 * time.Second):
					t.Error("a timer due within 300µs did not fire within 5s: a wake was lost")
					return
				}
			}
		}()
	}
	wg.Wait()
}
