package timingwheel

import (
	"context"
	"os"
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
	wk := newWakeup()
	require.NotNil(t, wk)
	defer wk.close()
	for _, d := range []time.Duration{200 * time.Microsecond, 2 * time.Millisecond} {
		t0 := time.Now()
		wk.arm(d)
		select {
		case <-wk.channel():
		case <-time.After(10 * time.Second):
			t.Fatalf("no signal %v after arming for %v", time.Since(t0), d)
		}
		assert.GreaterOrEqual(t, time.Since(t0), d)
	}
	// Arming again replaces the earlier setting.
	wk.arm(time.Hour)
	t0 := time.Now()
	wk.arm(time.Millisecond)
	select {
	case <-wk.channel():
		assert.GreaterOrEqual(t, time.Since(t0), time.Millisecond)
	case <-time.After(10 * time.Second):
		t.Fatal("the later arming did not replace the earlier one")
	}
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
		syncWheel(t, w) // its driver has made its alarm
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

// An alarm on the real clock sets both its runtime timer and its wakeup,
// so that whichever goes off first wakes the driver: the wakeup when the
// program is idle, the timer, set a backup interval later, when its Ps
// are too busy to poll the fd.
func TestAlarmSetsTheRuntimeTimerBesideTheWakeup(t *testing.T) {
	const backup = 5 * time.Millisecond
	a := newAlarm(clock.New(), func() int64 { return 0 }, true, backup)
	defer a.close()
	require.NotNil(t, a.wk, "this system gives a timerfd")
	start := time.Now()
	a.set(int64(time.Millisecond), time.Millisecond)
	assert.True(t, a.timerOn, "runtime timer set")
	assert.True(t, a.wkOn, "wakeup set")
	select {
	case <-a.wakeupC():
	case <-time.After(10 * time.Second):
		t.Fatal("the wakeup did not go off")
	}
	select {
	case <-a.timerC():
		a.timerFired()
	case <-time.After(10 * time.Second):
		t.Fatal("the runtime timer did not go off")
	}
	assert.GreaterOrEqual(t, time.Since(start), time.Millisecond+backup, "the timer goes off the backup interval after the wakeup")
	assert.False(t, a.timerOn)
}
