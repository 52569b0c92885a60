package mysqlstore

import (
	"database/sql"
	"time"
)

// Instants cross the driver as text and integers, never as time.Time: a
// DATETIME(6) written from a UTC text and read as microseconds since 1970
// (US(x) in the statements) means the same whatever the application's DSN
// says of parseTime and loc.

// datetime is t as a DATETIME(6) text in UTC, rounded up to the
// microsecond, so that a message is never claimed before its Due.
func datetime(t time.Time) string {
	if r := t.Truncate(time.Microsecond); !r.Equal(t) {
		t = r.Add(time.Microsecond)
	}
	return t.UTC().Format("2006-01-02 15:04:05.000000")
}

// dueArg is the argument of a due time: its text, or NULL for the zero
// time, which the statements read as the database's now.
func dueArg(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return datetime(t)
}

// micros is d in microseconds, rounded up, within ±100 years (DATETIME
// ends in 9999).
func micros(d time.Duration) int64 {
	const maxMicros = 100 * 366 * 24 * int64(time.Hour/time.Microsecond)
	us := d / time.Microsecond
	if d%time.Microsecond > 0 {
		us++
	}
	return max(-maxMicros, min(int64(us), maxMicros))
}

// instant is the time of us microseconds since 1970, in UTC.
func instant(us int64) time.Time { return time.UnixMicro(us).UTC() }

// orZero is the instant of a nullable microsecond count: the zero time
// for NULL.
func orZero(us sql.NullInt64) time.Time {
	if !us.Valid {
		return time.Time{}
	}
	return instant(us.Int64)
}

// earliest is the earlier of a and b, ignoring zero times.
func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}
