package main

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A queue holds whatever producers and handlers put in it: an ID, a
// payload or an error text may carry terminal control sequences (ESC ]
// sets a terminal's title, ESC [ 2K with a CR rewrites the line), planted
// or by accident. twq prints none of them raw: IDs and payloads are
// quoted (strconv.Quote), other texts go through escapeText, and JSON
// through escapeJSON.

// escapeText returns s with every byte a terminal could act on written as
// a Go escape, so that it shows as text on one line: C0 controls (\n, \t
// and \r among them, and ESC as \x1b), DEL, the C1 controls U+0080 to
// U+009F and other characters strconv.IsPrint refuses (as the bidi
// overrides) as \uXXXX, bytes that are not UTF-8 as \xNN; and backslash
// as \\, so that an escape in the text cannot pass for one twq wrote.
func escapeText(s string) string { return escape(s, true) }

// escapeControls is escapeText without doubling backslashes: for twq's
// own messages, whose %q-quoted parts are escaped already.
func escapeControls(s string) string { return escape(s, false) }

func escape(s string, backslash bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\' && backslash:
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r == ' ' || strconv.IsPrint(r):
			b.WriteRune(r)
		case r < 0x10000:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
		i += size
	}
	return b.String()
}

// escapeJSON rewrites the characters that encoding/json leaves raw and a
// terminal may act on, DEL and the C1 controls U+0080 to U+009F (it
// escapes the C0 ones itself), as \u escapes. They can only be inside
// strings, where the escape decodes to the same character: the JSON
// means what it meant.
func escapeJSON(b []byte) []byte {
	if !bytes.ContainsFunc(b, isC1orDEL) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if isC1orDEL(r) && !(r == utf8.RuneError && size == 1) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}

func isC1orDEL(r rune) bool { return r == 0x7f || (r >= 0x80 && r <= 0x9f) }
