package main

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunScenariosWritesEachAsItFinishes checks that a scenario's rows
// are in the table before the next scenario starts, and that those of
// the scenarios before a failure stay there.
func TestRunScenariosWritesEachAsItFinishes(t *testing.T) {
	var out bytes.Buffer
	table := newTableWriter(&out, []string{"first", "second", "third"})
	var seenBySecond, seenByThird string
	scenarios := []scenario{
		{name: "first", run: func(*env) ([]row, error) {
			return []row{both("figure one", unitCount, 1, 2)}, nil
		}},
		{name: "second", run: func(*env) ([]row, error) {
			seenBySecond = out.String()
			return []row{both("figure two", unitCount, 3, 4)}, nil
		}},
		{name: "third", run: func(*env) ([]row, error) {
			seenByThird = out.String()
			return nil, errors.New("broken")
		}},
	}
	rows, err := runScenarios(newEnv(defaultOptions(), io.Discard), scenarios, table)
	require.EqualError(t, err, "third: broken")

	assert.Contains(t, seenBySecond, "figure one")
	assert.NotContains(t, seenBySecond, "figure two")
	assert.Equal(t, 1, strings.Count(seenBySecond, "SCENARIO"), "the header comes first")
	assert.Contains(t, seenByThird, "figure two")
	assert.Equal(t, seenByThird, out.String(), "nothing written for the failed scenario")
	require.Len(t, rows, 2)
	assert.Equal(t, "first", rows[0].Scenario)
	assert.Equal(t, "second", rows[1].Scenario)
}
