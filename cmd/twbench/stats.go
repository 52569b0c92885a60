package main

import (
	"math"
	"slices"
	"time"
)

// percentile returns the q-quantile (0 < q <= 1) of sorted samples: the
// smallest sample with at least a fraction q of the samples at or below
// it.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted))-1e-9)) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// median sorts v, which is not empty, and returns its middle value, or
// the mean of the two middle ones.
func median[T ~int64 | ~float64](v []T) T {
	slices.Sort(v)
	m := len(v) / 2
	if len(v)%2 == 0 {
		return (v[m-1] + v[m]) / 2
	}
	return v[m]
}
