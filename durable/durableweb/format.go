package durableweb

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"
)

// when shows an instant in UTC, to the second.
func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// ago shows t relative to now: "in 4m10s", "3m2s ago", "now".
func ago(t, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := t.Sub(now).Round(time.Second)
	switch {
	case d == 0:
		return "now"
	case d > 0:
		return "in " + showDuration(d)
	}
	return showDuration(-d) + " ago"
}

// showDuration shows d briefly: whole seconds from a second on, and
// milliseconds or microseconds below.
func showDuration(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(time.Second).String()
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

// short cuts s to n runes, marking the cut.
func short(n int, s string) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// A payloadView is a payload as a page shows it.
type payloadView struct {
	Kind  string // "json", "text", "hex" or "empty"
	Text  string // pretty-printed JSON, the text, or a hex dump
	Size  int    // the payload's length in bytes
	Shown int    // how many of its bytes Text shows
}

// maxShown is how much of a payload a message page shows.
const maxShown = 64 << 10

// showPayload shows p as pretty-printed JSON if it is JSON, as text if it
// is UTF-8 text, as a hex dump otherwise.
func showPayload(p []byte) payloadView {
	v := payloadView{Size: len(p), Shown: len(p)}
	switch {
	case len(p) == 0:
		v.Kind = "empty"
	case json.Valid(p):
		var b bytes.Buffer
		if json.Indent(&b, p, "", "  ") == nil && b.Len() <= 4*maxShown {
			v.Kind, v.Text = "json", b.String()
			return v
		}
		fallthrough
	case isText(p):
		v.Kind = "text"
		if len(p) > maxShown {
			cut := maxShown
			for cut > 0 && !utf8.RuneStart(p[cut]) {
				cut--
			}
			p, v.Shown = p[:cut], cut
		}
		v.Text = string(p)
	default:
		v.Kind = "hex"
		if len(p) > maxShown {
			p, v.Shown = p[:maxShown], maxShown
		}
		v.Text = hex.Dump(p)
	}
	return v
}

// isText reports whether p is UTF-8 without control characters other
// than tabs and line ends.
func isText(p []byte) bool {
	if !utf8.Valid(p) {
		return false
	}
	for _, r := range string(p) {
		if unicode.IsControl(r) && r != '\n' && r != '\r' && r != '\t' {
			return false
		}
	}
	return true
}

// preview is a payload's first line in a list: its text, cut, or its size.
func preview(p []byte) string {
	switch {
	case len(p) == 0:
		return ""
	case isText(p):
		return short(80, string(bytes.Join(bytes.Fields(p[:min(len(p), 400)]), []byte(" "))))
	}
	return fmt.Sprintf("(%d bytes, binary)", len(p))
}
