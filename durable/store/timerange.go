package store

import (
	"fmt"
	"time"
)

// The time range every store keeps exactly (see the package doc): the
// intersection of the file store's (Unix nanoseconds in an int64, years
// 1678 to 2262), Redis's (microseconds since 1970 in a Lua double, up to
// 2^53) and PostgreSQL's (timestamptz, microseconds, years -4713 to
// 294276).
var (
	// MinTime is the earliest instant a store keeps: the Unix epoch.
	MinTime = time.Unix(0, 0).UTC()
	// MaxTime is the latest instant a store keeps: 2^53-1 microseconds
	// after the Unix epoch, in the year 2255.
	MaxTime = time.UnixMicro(1<<53 - 1).UTC()
)

// CheckTime returns an error if t is neither the zero time (which a
// method reads as "now") nor within [MinTime, MaxTime].
func CheckTime(t time.Time) error {
	if t.IsZero() || InRange(t) {
		return nil
	}
	return fmt.Errorf("%v is outside the time range a store keeps, %v to %v", t, MinTime, MaxTime)
}

// InRange reports whether t is within [MinTime, MaxTime].
func InRange(t time.Time) bool {
	return !t.Before(MinTime) && !t.After(MaxTime)
}
