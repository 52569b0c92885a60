package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestMedian checks the median shared by fire's rounds, startstop's parts
// and durable's reopens: the middle value of an odd count, the mean of the
// two middle ones of an even count, whatever the order.
func TestMedian(t *testing.T) {
	assert.Equal(t, 3*time.Millisecond, median([]time.Duration{9 * time.Millisecond, time.Millisecond, 3 * time.Millisecond}))
	assert.Equal(t, 2.5, median([]float64{4, 1, 2, 3}))
	assert.Equal(t, 7.0, median([]float64{7}))
}
