package main

import "fmt"

// inRounds calls measure for each of the -rounds rounds of scenario, and
// writes each round's figures to stderr as they come.
func inRounds[R fmt.Stringer](e *env, scenario string, measure func(r int) (R, error)) ([]R, error) {
	var rs []R
	for r := range e.opts.rounds {
		rr, err := measure(r)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(e.stderr, "twbench: %s round %d of %d: %s\n", scenario, r+1, e.opts.rounds, rr)
		rs = append(rs, rr)
	}
	return rs, nil
}

// sideBySide runs the measurements of round r of a scenario that
// measures its rates in rounds (river, asynq): each of ours[i] beside
// theirs[i], ours first in even rounds and theirs first in odd ones, so
// that neither side is always measured on a machine the other just
// warmed. It stops at the first error.
func sideBySide(r int, ours, theirs []func() error) error {
	for i := range ours {
		first, second := ours[i], theirs[i]
		if r%2 == 1 {
			first, second = second, first
		}
		if err := first(); err != nil {
			return err
		}
		if err := second(); err != nil {
			return err
		}
	}
	return nil
}

// medianOver returns the median of f over the rounds rs, which is not
// empty (fire's, river's, asynq's).
func medianOver[R any](rs []R, f func(R) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	return median(v)
}

// bothMedians is the row of figure with the medians over the rounds rs of
// ours and theirs side by side.
func bothMedians[R any](rs []R, figure, unit string, ours, theirs func(R) float64) row {
	return both(figure, unit, medianOver(rs, ours), medianOver(rs, theirs))
}
