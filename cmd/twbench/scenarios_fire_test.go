package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestFireOrderRotates checks that over three rounds each engine is
// measured first, second and last once, so that none always finds the
// process warmed by the others.
func TestFireOrderRotates(t *testing.T) {
	var position [numFireEngines][numFireEngines]int // engine, place: count
	for r := range 3 {
		order := fireOrder(r)
		seen := map[fireEngine]bool{}
		for place, eng := range order {
			assert.False(t, seen[eng], "round %d measures %d twice", r, eng)
			seen[eng] = true
			position[eng][place]++
		}
	}
	for eng := range numFireEngines {
		for place := range numFireEngines {
			assert.Equal(t, 1, position[eng][place], "engine %d at place %d", eng, place)
		}
	}
	assert.Equal(t, fireOrder(0), fireOrder(3), "the rotation repeats every three rounds")
}

// TestMedianOfRounds checks the median taken over rounds: the middle one
// for an odd count, the mean of the two middle ones for an even count,
// whatever the order the rounds came in.
func TestMedianOfRounds(t *testing.T) {
	rounds := func(ms ...int) []fireFigures {
		rs := make([]fireFigures, len(ms))
		for i, m := range ms {
			rs[i] = fireFigures{wall: time.Duration(m) * time.Millisecond}
		}
		return rs
	}
	wall := func(f fireFigures) float64 { return f.wall.Seconds() * 1000 }
	assert.Equal(t, 7.0, medianOver(rounds(7), wall))
	assert.Equal(t, 3.0, medianOver(rounds(9, 1, 3), wall), "one stalled round out of three does not move it")
	assert.Equal(t, 4.0, medianOver(rounds(5, 1, 3, 8), wall))
}

// TestPooledLatenessKeepsEverySample checks that the plot gets the
// samples of every round, sorted.
func TestPooledLatenessKeepsEverySample(t *testing.T) {
	rs := []fireResult{
		{late: []time.Duration{1, 5, 9}},
		{late: []time.Duration{2, 3}},
	}
	assert.Equal(t, []time.Duration{1, 2, 3, 5, 9}, pooledLateness(rs))
	assert.Equal(t, []time.Duration{4}, pooledLateness([]fireResult{{late: []time.Duration{4}}}))
}

// TestFireFigures checks the summary of one round: percentiles of the
// sorted samples, expiries a second over the wall time.
func TestFireFigures(t *testing.T) {
	late := make([]time.Duration, 1000)
	for i := range late {
		late[i] = time.Duration(i+1) * time.Microsecond
	}
	f := fireResult{wall: 2 * time.Second, cpu: time.Second, late: late, early: 3}.figures()
	assert.Equal(t, 500*time.Microsecond, f.p50)
	assert.Equal(t, 990*time.Microsecond, f.p99)
	assert.Equal(t, 999*time.Microsecond, f.p999)
	assert.Equal(t, 1000*time.Microsecond, f.max)
	assert.Equal(t, 500.0, f.expiries)
	assert.Equal(t, 3, f.early)
	assert.Equal(t, time.Second, f.cpu)
}
