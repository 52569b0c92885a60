package timingwheel

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// As in github.com/RussellLuo/timingwheel, a task already due when it is
// scheduled on a wheel not started yet runs at once; later ones wait for
// Start.
func TestDueTasksBeforeStartRunAtOnce(t *testing.T) {
	mock := clock.NewMock()
	w, err := New(WithClock(mock), WithExecutor(inline))
	require.NoError(t, err)
	fired := newFirings()
	zero := w.AfterFunc(0, fired.task(mock, 0))
	w.AfterFunc(-time.Second, fired.task(mock, 1))
	w.AfterFuncAt(mock.Now(), fired.task(mock, 2))
	var runs atomic.Int32
	periodic := w.ScheduleFunc(schedulerFunc(func(prev time.Time) time.Time {
		return prev.Add(10 * time.Millisecond).Truncate(10 * time.Millisecond)
	}), func() { runs.Add(1) })
	due := w.ScheduleFunc(&countdown{n: 1}, func() { runs.Add(100) }) // once, at once
	later := w.AfterFunc(time.Millisecond, fired.task(mock, 3))
	for i := range 3 {
		assert.Equal(t, 1, fired.count(i), "task %d", i)
	}
	assert.False(t, zero.Stop())
	assert.EqualValues(t, 100, runs.Load())
	assert.Zero(t, fired.count(3))

	w.Start()
	t.Cleanup(w.Stop)
	advance(t, w, mock, time.Millisecond)
	assert.Equal(t, 1, fired.count(3))
	assert.False(t, later.Stop())
	advance(t, w, mock, 9*time.Millisecond)
	assert.EqualValues(t, 101, runs.Load())
	assert.True(t, periodic.Stop())
	assert.False(t, due.Stop(), "its schedule ended after the one run")
}

// As in github.com/RussellLuo/timingwheel, Next gets prev in UTC, so a
// calendar schedule computes the same hours whatever the local zone; the
// schedule still runs on the wheel's monotonic clock.
func TestSchedulerGetsPrevInUTC(t *testing.T) {
	w, mock := mockWheel(t)
	var locs []*time.Location
	s := schedulerFunc(func(prev time.Time) time.Time {
		locs = append(locs, prev.Location())
		return prev.Add(time.Millisecond)
	})
	tm := w.ScheduleFunc(s, func() {})
	for range 3 {
		advance(t, w, mock, time.Millisecond)
	}
	assert.True(t, tm.Stop())
	require.Len(t, locs, 4)
	for _, loc := range locs {
		assert.Equal(t, time.UTC, loc)
	}
}

// As in github.com/RussellLuo/timingwheel, ScheduleFunc returns nil when
// the first Next is the zero time; a nil Timer's methods return false.
func TestScheduleFuncReturnsNilWhenNothingIsScheduled(t *testing.T) {
	w, _ := mockWheel(t)
	tm := w.ScheduleFunc(schedulerFunc(func(time.Time) time.Time { return time.Time{} }), func() {})
	require.Nil(t, tm)
	assert.False(t, tm.Stop())
	assert.False(t, tm.Reset(time.Second))
	assert.Zero(t, w.Len())
}
