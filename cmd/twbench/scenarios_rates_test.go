package main

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRatesTakesFiveRoundsUnlessTold(t *testing.T) {
	o, err := parseArgs([]string{"fire", "-rates"})
	require.NoError(t, err)
	assert.True(t, o.rates)
	assert.Equal(t, 5, o.rounds)
	o, err = parseArgs([]string{"fire", "-rates", "-rounds", "2"})
	require.NoError(t, err)
	assert.Equal(t, 2, o.rounds)
}

// A child of the sweep measures one side once and prints its figures.
func TestRateChildMeasuresOnce(t *testing.T) {
	for _, side := range []string{"wheel", "runtime"} {
		var out, errOut bytes.Buffer
		require.Equal(t, 0, rateChildMain(side+" 200 100ms", &out, &errOut), errOut.String())
		var f rateFigures
		require.NoError(t, json.Unmarshal(out.Bytes(), &f))
		assert.Zero(t, f.Early, side)
		assert.Positive(t, f.CPU, side)
		assert.GreaterOrEqual(t, f.P99, f.P50, side)
		assert.Equal(t, 100*time.Millisecond, f.Window, side)
	}
	var errOut bytes.Buffer
	assert.Equal(t, 2, rateChildMain("wheel x 1s", &bytes.Buffer{}, &errOut))
	assert.Contains(t, errOut.String(), "bad N or WINDOW")
}

func TestCountLabel(t *testing.T) {
	assert.Equal(t, "2k", countLabel(2000))
	assert.Equal(t, "1M", countLabel(1_000_000))
	assert.Equal(t, "1500", countLabel(1500))
}
