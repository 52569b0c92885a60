package main

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

// medianOver returns the median of f over the rounds rs.
func medianOver[R any](rs []R, f func(R) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	return median(v)
}
