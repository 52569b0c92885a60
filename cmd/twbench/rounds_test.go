package main

import (
	"errors"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// meanOfTwoRounds finds the two lines of stderr that pattern matches, each
// with ours and the other side's rate as its two groups, and returns the
// mean of each side's: the median of two rounds.
func meanOfTwoRounds(t *testing.T, stderr, pattern string) (ours, theirs float64) {
	t.Helper()
	rounds := regexp.MustCompile(pattern).FindAllStringSubmatch(stderr, -1)
	require.Len(t, rounds, 2, stderr)
	mean := func(i int) float64 {
		a, errA := strconv.ParseFloat(rounds[0][i], 64)
		b, errB := strconv.ParseFloat(rounds[1][i], 64)
		require.NoError(t, errors.Join(errA, errB))
		return (a + b) / 2
	}
	return mean(1), mean(2)
}

// TestSideBySideAlternates checks the order of the measurements of a
// round: ours first in even rounds, theirs first in odd ones, pair by
// pair, and that the first error stops the round.
func TestSideBySideAlternates(t *testing.T) {
	var got []string
	step := func(name string) func() error {
		return func() error { got = append(got, name); return nil }
	}
	ours := []func() error{step("o1"), step("o2")}
	theirs := []func() error{step("t1"), step("t2")}
	require.NoError(t, sideBySide(0, ours, theirs))
	require.Equal(t, []string{"o1", "t1", "o2", "t2"}, got)
	got = nil
	require.NoError(t, sideBySide(1, ours, theirs))
	require.Equal(t, []string{"t1", "o1", "t2", "o2"}, got)

	got = nil
	boom := errors.New("boom")
	err := sideBySide(0, []func() error{func() error { return boom }, step("o2")}, theirs)
	require.ErrorIs(t, err, boom)
	require.Empty(t, got, "nothing after the first error")
}
