package pgstore

import (
	"math"
	"time"
)

// PostgreSQL keeps instants to the microsecond, from 4713 BC to 294276
// AD, which holds store.MinTime to store.MaxTime, the range the queue
// checks every due time against (store.ValidateBatch, store.CheckTime).
// A due time is rounded up to the microsecond, so that a message is never
// claimed before its Due.

// maxMicros bounds the durations given to PostgreSQL (about 100 years),
// which multiplies them in double precision, exact up to 2^53.
const maxMicros = 100 * 366 * 24 * int64(time.Hour/time.Microsecond)

// dueArg is the due time kept for t: rounded up to the microsecond.
func dueArg(t time.Time) time.Time {
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
