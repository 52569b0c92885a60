package store

import (
	"math"
	"time"
)

// Series is what a store keeps of a series of the queue's Schedule: all a
// process needs to take part in it. The store only keeps it; what the
// fields mean is the queue's.
type Series struct {
	// Name is the series' name, and Fingerprint that of its Schedule
	// (which the queue compares, to find processes that disagree).
	Name, Fingerprint string
	// Last is the time of the last message of the series written, and
	// Next the time after it, when the series writes its next message.
	// A store keeps both to the nanosecond (Unix nanoseconds; a type of
	// microseconds would not do), since AdvanceSeries compares Last
	// exactly; the zero time stays the zero time.
	Last, Next time.Time
	// Pending is the ID of the last message of the series written (the
	// message of Last, or of an earlier time if a step wrote none), which
	// DeleteSeries cancels.
	Pending string
}

// SeriesStep is one step of a series, for AdvanceSeries: the state the
// caller read, the state it writes, and the messages it writes and
// cancels with it. Every value is the queue's; the store applies them.
type SeriesStep struct {
	Name string
	// ExpectLast and ExpectFingerprint are the Last and Fingerprint of the
	// series the caller read; both zero if it found none.
	ExpectLast        time.Time
	ExpectFingerprint string
	// Fingerprint, Last and Next are the series' new state.
	Fingerprint string
	Last, Next  time.Time
	// Message is written as Enqueue would, if its ID is not empty.
	Message Message
	// Cancel, if not empty, is the ID of a message to cancel as Cancel
	// would, before Message is written.
	Cancel string
}

// UnixNano is t in Unix nanoseconds, saturated to what an int64 holds
// (years 1678 to 2262): the form in which the file store and cursors keep
// instants.
func UnixNano(t time.Time) int64 {
	switch {
	case t.Before(minNano):
		return math.MinInt64
	case t.After(maxNano):
		return math.MaxInt64
	}
	return t.UnixNano()
}

var (
	minNano = time.Unix(0, math.MinInt64)
	maxNano = time.Unix(0, math.MaxInt64)
)

// SeriesNanos is how a store that keeps a series' times as integers keeps
// t: its Unix nanoseconds (see UnixNano), 0 for the zero time, and
// epochNanos for the Unix epoch (MinTime), whose Unix nanoseconds are 0
// too. SeriesTime reads it back.
func SeriesNanos(t time.Time) int64 {
	switch {
	case t.IsZero():
		return 0
	case t.Equal(time.Unix(0, 0)):
		return epochNanos
	}
	return UnixNano(t)
}

// SeriesTime is the time SeriesNanos kept as ns.
func SeriesTime(ns int64) time.Time {
	switch ns {
	case 0:
		return time.Time{}
	case epochNanos:
		return time.Unix(0, 0)
	}
	return time.Unix(0, ns)
}

// epochNanos stands for the Unix epoch in SeriesNanos, where 0 is the
// zero time: no other time of the range has it.
const epochNanos = math.MinInt64
