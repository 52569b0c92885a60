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
	rounds := func(ms ...int) []fireResult {
		rs := make([]fireResult, len(ms))
		for i, m := range ms {
			rs[i] = fireResult{wall: time.Duration(m) * time.Millisecond}
		}
		return rs
	}
	wall := func(r fireResult) float64 { return r.wall.Seconds() * 1000 }
	assert.Equal(t, 7.0, medianOf(rounds(7), wall))
	assert.Equal(t, 3.0, medianOf(rounds(9, 1, 3), wall), "one stalled round out of three does not move it")
	assert.Equal(t, 4.0, medianOf(rounds(5, 1, 3, 8), wall))
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
