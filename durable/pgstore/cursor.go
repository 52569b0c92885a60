package pgstore

import (
	"fmt"
	"math"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// A List cursor is a store.Cursor: its At is the instant the state orders
// by, which PostgreSQL keeps to the microsecond, and its Seq the row's
// seq.

// formatCursor returns the cursor of state st at the position (at, seq).
func formatCursor(st store.State, at time.Time, seq int64) string {
	return store.Cursor{State: st, At: at, Seq: uint64(seq)}.String()
}

// parseCursor returns the position of a cursor of state st, or an error
// wrapping store.ErrInvalidCursor.
func parseCursor(st store.State, cursor string) (time.Time, int64, error) {
	c, err := store.ParseCursor(st, cursor)
	if err != nil {
		return time.Time{}, 0, err
	}
	if c.Key != "" || c.Seq > math.MaxInt64 {
		return time.Time{}, 0, fmt.Errorf("%w: %q", store.ErrInvalidCursor, cursor)
	}
	return c.At, int64(c.Seq), nil
}
