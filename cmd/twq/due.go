package main

import (
	"flag"
	"time"
)

// dueFlags are -at and -in, which say when a message falls due.
type dueFlags struct {
	at, in string
}

func (d *dueFlags) register(f *flag.FlagSet) {
	f.StringVar(&d.at, "at", "", "due at this time (RFC 3339)")
	f.StringVar(&d.in, "in", "", "due in this long (a Go duration)")
}

// due returns the due time the flags give, counting -in from now, or the
// zero time (due now, on the store's clock) if neither is set.
func (d *dueFlags) due(name string, now time.Time) (time.Time, error) {
	switch {
	case d.at != "" && d.in != "":
		return time.Time{}, usagef("%s: give -at or -in, not both", name)
	case d.at != "":
		t, err := time.Parse(time.RFC3339, d.at)
		if err != nil {
			return time.Time{}, usagef("%s: -at %q is not an RFC 3339 time such as 2026-11-24T03:00:00Z", name, d.at)
		}
		return t, nil
	case d.in != "":
		in, err := time.ParseDuration(d.in)
		if err != nil || in < 0 {
			return time.Time{}, usagef("%s: -in %q is not a duration of zero or more such as 90s or 1h30m", name, d.in)
		}
		return now.Add(in), nil
	}
	return time.Time{}, nil
}
