package timingwheel

import (
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// newTestLane returns a lane set up as newBuckets sets up its lanes.
func newTestLane() *lane {
	return &newBuckets(1, 1, 1)[0].lanes[0]
}

// The lane's swap-remove keeps every timer's pos right.
func TestLaneRemoveKeepsPositions(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for round := range 60 {
		l := newTestLane()
		held := map[*Timer]bool{}
		for range r.IntN(250) {
			if len(l.items) > 0 && r.IntN(3) > 0 {
				tm := l.items[r.IntN(len(l.items))]
				l.remove(tm)
				require.False(t, slices.Contains(l.items, tm), "removed timer still in the lane")
				delete(held, tm)
			} else {
				tm := &Timer{}
				l.push(tm, nil)
				held[tm] = true
			}
			require.Len(t, l.items, len(held), "round %d", round)
			for i, tm := range l.items {
				require.EqualValues(t, i, tm.pos, "round %d", round)
				require.True(t, held[tm], "round %d: timer at %d", round, i)
			}
		}
	}
}

func TestLaneShrinksWhenEmptied(t *testing.T) {
	l := newTestLane()
	timers := make([]*Timer, 10_000)
	for i := range timers {
		timers[i] = &Timer{}
		l.push(timers[i], nil)
	}
	for _, tm := range timers[:9_990] {
		l.remove(tm)
	}
	require.Len(t, l.items, 10)
	require.LessOrEqual(t, cap(l.items), minLaneCap)
	for _, tm := range timers[9_990:] {
		l.remove(tm)
	}
	require.Empty(t, l.items)
	require.Equal(t, &l.inline[0], &l.items[:1][0], "an empty lane uses its inline slots again")
}

// The driver keeps the arrays of lanes it empties and grows the lanes it
// fills into them rather than into new arrays.
func TestDriverReusesLaneArrays(t *testing.T) {
	w, mock := mockWheel(t, func(c *config) { c.lanes = 1 })
	// A timer every 100ms keeps the driver from idling, which would let
	// the spares go.
	busy := w.ScheduleFunc(Every(100*time.Millisecond), func() {})
	for range 200 {
		w.AfterFunc(time.Millisecond, func() {})
	}
	advance(t, w, mock, 2*time.Millisecond)
	// Sync orders these reads after the driver's writes, and the driver
	// touches the spares only while it flushes, which it does not now.
	require.Len(t, w.spares.arrays, 1, "the emptied lane's array is kept")
	slots := w.spares.slots
	require.Equal(t, cap(w.spares.arrays[0]), slots)
	require.GreaterOrEqual(t, slots, 200)
	for _, tm := range w.spares.arrays[0][:cap(w.spares.arrays[0])] {
		require.Nil(t, tm, "a spare array holds no timer")
	}

	// Timers cascaded from level 1 grow a level-0 lane into a spare (once
	// the lane is large enough for the spare to fit it) rather than a new
	// array; the level-1 lane's array is kept once the cascade has emptied
	// it.
	base := func(a []*Timer) **Timer { return &a[:1][0] }
	var fired atomic.Int32
	for range 200 {
		w.AfterFunc(600*time.Millisecond, func() { fired.Add(1) })
	}
	reusable := map[**Timer]bool{base(w.spares.arrays[0]): true}
	lv1 := w.levels[1].Load()
	for i := range lv1.buckets {
		if l := &lv1.buckets[i].lanes[0]; cap(l.items) > len(l.inline) {
			reusable[base(l.items)] = true
		}
	}
	require.Len(t, reusable, 2)
	advance(t, w, mock, 400*time.Millisecond) // the level-1 bucket cascades
	require.Zero(t, fired.Load())
	lv0 := w.levels[0].Load()
	var grown *lane
	for i := range lv0.buckets {
		if l := &lv0.buckets[i].lanes[0]; grown == nil || len(l.items) > len(grown.items) {
			grown = l
		}
	}
	require.NotNil(t, grown)
	require.Len(t, grown.items, 200)
	require.True(t, reusable[base(grown.items)], "the level-0 lane grew into a spare")
	require.Len(t, w.spares.arrays, 1, "and the other one is still kept")
	advance(t, w, mock, 300*time.Millisecond)
	require.EqualValues(t, 200, fired.Load())
	require.Len(t, w.spares.arrays, 2, "both kept again once the timers fired")
	total := 0
	for _, a := range w.spares.arrays {
		require.True(t, reusable[base(a)])
		total += cap(a)
	}
	require.Equal(t, total, w.spares.slots)

	// With nothing to do for more than spareLinger, the driver lets them go.
	require.True(t, busy.Stop())
	advance(t, w, mock, 200*time.Millisecond)
	require.Empty(t, w.spares.arrays)
	require.Zero(t, w.spares.slots)
}
