package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"gonum.org/v1/plot"
)

func TestPlotTicksHaveNoExponents(t *testing.T) {
	for _, tk := range []plot.Ticker{plot.LogTicks{Prec: -1}, plot.DefaultTicks{}} {
		for _, r := range [][2]float64{{1, 1e7}, {0.0001, 0.01}, {1, 2.5e6}} {
			ticks := plainTicks{tk}.Ticks(r[0], r[1])
			assert.NotEmpty(t, ticks)
			for _, x := range ticks {
				assert.False(t, strings.ContainsAny(x.Label, "eE"), "%T %v: label %q", tk, r, x.Label)
			}
		}
	}
	labels := map[string]bool{}
	for _, x := range (plainTicks{plot.LogTicks{Prec: -1}}).Ticks(1, 1e7) {
		labels[x.Label] = true
	}
	assert.True(t, labels["1000000"], "%v", labels)
}
