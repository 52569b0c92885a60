package timingwheel

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// newTestLane returns a lane set up as newBuckets sets up its lanes.
func newTestLane() *lane {
	return &newBuckets(1, 1, 1)[0].lanes[0]
}

// The lane's swap-remove keeps every timer's pos right and, during a
// flush, keeps the timers the flush has yet to see in front of the ones
// added meanwhile.
func TestLaneRemoveKeepsPositionsAndFlushRegion(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for round := range 60 {
		l := newTestLane()
		originals := map[*Timer]bool{}
		for range r.IntN(100) {
			tm := &Timer{}
			l.push(tm)
			originals[tm] = true
		}
		l.limit = int32(len(l.items))
		for range r.IntN(150) {
			if len(l.items) > 0 && r.IntN(3) > 0 {
				tm := l.items[r.IntN(len(l.items))]
				l.remove(tm)
				require.False(t, slices.Contains(l.items, tm), "removed timer still in the lane")
				delete(originals, tm)
			} else {
				l.push(&Timer{}) // added during the flush
			}
			require.EqualValues(t, len(originals), l.limit, "round %d", round)
			for i, tm := range l.items {
				require.EqualValues(t, i, tm.pos, "round %d", round)
				require.Equal(t, i < int(l.limit), originals[tm], "round %d: timer at %d", round, i)
			}
		}
	}
}

func TestLaneShrinksWhenEmptied(t *testing.T) {
	l := newTestLane()
	timers := make([]*Timer, 10_000)
	for i := range timers {
		timers[i] = &Timer{}
		l.push(timers[i])
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
