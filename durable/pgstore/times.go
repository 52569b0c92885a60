package pgstore

import (
	"math"
	"time"
)

// PostgreSQL keeps instants to the microsecond, from 4713 BC to 294276 AD.
// A due time is rounded up to the microsecond, so that a message is never
// claimed before its Due, and kept within minDue and maxDue, where adding
// any duration the store takes stays in range.
var (
	minDue = time.Date(-4000, 1, 1, 0, 0, 0, 0, time.UTC)
	maxDue = time.Date(200000, 1, 1, 0, 0, 0, 0, time.UTC)
)

// maxMicros bounds the durations given to PostgreSQL (about 100 years),
// which multiplies them in double precision, exact up to 2^53.
const maxMicros = 100 * 366 * 24 * int64(time.Hour/time.Microsecond)

// dueArg is the due time kept for t: rounded up to the microsecond and
// within range.
func dueArg(t time.Time) time.Time {
	switch {
	case t.Before(minDue):
		return minDue
	case t.After(maxDue):
		return maxDue
	}
	if r := t.Truncate(time.Microsecond); !r.Equal(t) {
		return r.Add(time.Microsecond)
	}
	return t
}

// micros is d in microseconds, rounded up, within ±maxMicros.
func micros(d time.Duration) int64 {
	us := d / time.Microsecond
	if d%time.Microsecond > 0 {
		us++
	}
	return max(-maxMicros, min(int64(us), maxMicros))
}

// tokenArg converts a fencing token for PostgreSQL's bigint, and reports
// false for one no claim could have given (the sequence never goes above
// math.MaxInt64).
func tokenArg(token uint64) (int64, bool) {
	if token > math.MaxInt64 {
		return 0, false
	}
	return int64(token), true
}

// orZero is *t, or the zero time for nil (a NULL).
func orZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
