package durable

import (
	"time"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// FormatCursor returns the List cursor of state s at the position (at,
// seq).
//
// Deprecated: use store.Cursor's String.
func FormatCursor(s State, at time.Time, seq uint64) string {
	return store.Cursor{State: s, At: at, Seq: seq}.String()
}

// ParseCursor returns the position of a cursor FormatCursor made for
// state s.
//
// Deprecated: use store.ParseCursor.
func ParseCursor(s State, cursor string) (at time.Time, seq uint64, err error) {
	c, err := store.ParseCursor(s, cursor)
	return c.At, c.Seq, err
}
