package durable

import (
	"fmt"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// What a queue offers only when its store has the optional interface:
// Pause and Resume (store.Pauser), Schedule (store.SeriesKeeper).

// pauseUnsupported is the error of Pause and Resume on a store that is
// not a store.Pauser.
func (q *Queue) pauseUnsupported() error {
	return fmt.Errorf("durable: %T: %w", q.store, store.ErrPauseUnsupported)
}

// keepsSeries returns an error wrapping store.ErrSeriesUnsupported if the
// store is not a store.SeriesKeeper.
func (q *Queue) keepsSeries() error {
	if q.keeper == nil {
		return fmt.Errorf("durable: %T: %w", q.store, store.ErrSeriesUnsupported)
	}
	return nil
}
