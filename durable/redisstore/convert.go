package redisstore

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// maxMicros is the largest score: Lua's doubles hold integers exactly up
// to 2^53, microseconds since 1970 up to the year 2255.
const maxMicros = 1<<53 - 1

// maxDuration is the longest lease, delay or back-off a script is given
// (100 years), so that now plus it stays exact.
const maxDuration = 100 * 365 * 24 * time.Hour

// dueArgs returns the score and the sub-microsecond digits of a due time.
// The score is the due time in microseconds since 1970, rounded up, so
// that a message is never claimed before its Due; sub is the nanoseconds
// of the due time within the microsecond that ends at the score, as 4
// digits, 0001 to 1000, which order messages of equal score and give the
// exact Due back. The zero time gives an empty score, which the scripts
// read as Redis's now. A time before 1970 is due at 1970, one after 2255
// at 2255.
func dueArgs(t time.Time) (score, sub string) {
	if t.IsZero() {
		return "", onMicro
	}
	sec := t.Unix()
	if sec < 0 {
		return "0", onMicro
	}
	if sec > maxMicros/1_000_000 {
		return strconv.FormatInt(maxMicros, 10), onMicro
	}
	ns := t.Nanosecond()
	us := sec*1e6 + int64(ns/1000)
	rem := ns % 1000
	if rem == 0 {
		return strconv.FormatInt(us, 10), onMicro
	}
	us++
	if us > maxMicros {
		return strconv.FormatInt(maxMicros, 10), onMicro
	}
	return strconv.FormatInt(us, 10), fmt.Sprintf("%04d", rem)
}

// onMicro is the sub-microsecond digits of a time on a microsecond.
const onMicro = "1000"

// A member of pending or dead is the ID behind a prefix of memberPrefixLen
// bytes: nsDigits digits of nanoseconds (dueArgs's sub), then 16 hex
// digits of the shard's seq counter (see scripts.go).
const (
	nsDigits        = 4
	memberPrefixLen = nsDigits + 16
)

// dueTime is the inverse of dueArgs.
func dueTime(score int64, sub int64) time.Time {
	t := time.UnixMicro(score)
	if sub > 0 && sub < 1000 {
		t = t.Add(-time.Duration(1000 - sub))
	}
	return t
}

// micros returns d in microseconds, rounded up, between 0 and maxDuration.
func micros(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	if d > maxDuration {
		d = maxDuration
	}
	return int64((d + time.Microsecond - 1) / time.Microsecond)
}

// fieldsArg is what the scripts keep in the fields hash for m, behind the
// nonce of the call that writes it: "MaxAttempts|Timeout|Kind", Timeout in
// nanoseconds and the Kind last, since it may hold a '|'; or "" for a
// message with none of them, which the scripts keep no entry for.
func fieldsArg(m *store.Message) string {
	if m.Kind == "" && m.MaxAttempts == 0 && m.Timeout == 0 {
		return ""
	}
	return strconv.Itoa(m.MaxAttempts) + "|" + strconv.FormatInt(int64(m.Timeout), 10) + "|" + m.Kind
}

// msgFields are the fields of a message beyond its ID, payload and due
// time, as fieldsArg writes them.
type msgFields struct {
	kind        string
	maxAttempts int
	timeout     time.Duration
}

// parseFields is the inverse of fieldsArg: "" (a message written without
// them, or by a version before them) is the zero fields.
func parseFields(v string) (msgFields, error) {
	if v == "" {
		return msgFields{}, nil
	}
	att, rest, ok1 := strings.Cut(v, "|")
	timeout, kind, ok2 := strings.Cut(rest, "|")
	a, err1 := strconv.Atoi(att)
	t, err2 := strconv.ParseInt(timeout, 10, 64)
	if !ok1 || !ok2 || err1 != nil || err2 != nil {
		return msgFields{}, fmt.Errorf("redisstore: unexpected fields %q", v)
	}
	return msgFields{kind: kind, maxAttempts: a, timeout: time.Duration(t)}, nil
}

// replyFields reads the fields of a message in a script's reply.
func replyFields(v any) (msgFields, error) {
	s, ok := v.(string)
	if !ok {
		return msgFields{}, fmt.Errorf("redisstore: unexpected fields %T from a script, want a string", v)
	}
	return parseFields(s)
}

// tokenString formats a fencing token for a script.
func tokenString(t uint64) string { return strconv.FormatUint(t, 10) }

// instant converts a score of a script's reply, -1 meaning none, to a time.
func instant(us int64) time.Time {
	if us < 0 {
		return time.Time{}
	}
	return time.UnixMicro(us)
}

// The scripts' replies are arrays of integers, bulk strings and arrays.
// These helpers read them, and fail on any other shape rather than panic.

func replyArray(v any, n int) ([]any, error) {
	a, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("redisstore: unexpected reply %T from a script", v)
	}
	if n >= 0 && len(a) != n {
		return nil, fmt.Errorf("redisstore: unexpected reply of %d elements from a script, want %d", len(a), n)
	}
	return a, nil
}

func replyInt(v any) (int64, error) {
	switch v := v.(type) {
	case int64:
		return v, nil
	case string:
		// Scores come as strings; they are integers, but Redis may
		// format them as doubles.
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n, nil
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, fmt.Errorf("redisstore: unexpected number %q from a script", v)
		}
		return int64(f), nil
	default:
		return 0, fmt.Errorf("redisstore: unexpected reply %T from a script, want an integer", v)
	}
}

func replyBytes(v any) ([]byte, error) {
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("redisstore: unexpected reply %T from a script, want a string", v)
	}
	if s == "" {
		return nil, nil
	}
	return []byte(s), nil
}

// replyInts reads n integers from a.
func replyInts(a []any) ([]int64, error) {
	out := make([]int64, len(a))
	for i, v := range a {
		n, err := replyInt(v)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}
