package durableweb

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// A filter picks the messages a list shows and "requeue all" requeues:
// by the start of their ID, by their kind, or both.
type filter struct {
	// Prefix, if not "", is the start of the IDs shown.
	Prefix string
	// Kind, if not "", is the kind of the messages shown.
	Kind string
	// NoKind shows only the messages without a kind.
	NoKind bool
}

// errKindAndNoKind refuses a filter by a kind and by no kind at once.
var errKindAndNoKind = errors.New("give a kind or tick “without a kind”, not both")

// filterOf reads a filter from a list's query or a form: prefix, kind,
// and nokind=1 for the messages without a kind.
func filterOf(v url.Values) (filter, error) {
	f := filter{Prefix: v.Get("prefix"), Kind: v.Get("kind"), NoKind: v.Get("nokind") != ""}
	if f.Kind != "" && f.NoKind {
		return filter{Prefix: f.Prefix}, errKindAndNoKind
	}
	return f, nil
}

// Any reports whether f filters anything out.
func (f filter) Any() bool { return f.Prefix != "" || f.Kind != "" || f.NoKind }

// match reports whether f keeps the message in.
func (f filter) match(in durable.Info) bool {
	switch {
	case !strings.HasPrefix(in.ID, f.Prefix):
		return false
	case f.NoKind:
		return in.Kind == ""
	case f.Kind != "":
		return in.Kind == f.Kind
	}
	return true
}

// values is f as a query, as filterOf reads it.
func (f filter) values() url.Values {
	v := url.Values{}
	if f.Prefix != "" {
		v.Set("prefix", f.Prefix)
	}
	if f.Kind != "" {
		v.Set("kind", f.Kind)
	}
	if f.NoKind {
		v.Set("nokind", "1")
	}
	return v
}

// describe says which messages f keeps, after "messages" ("" for all),
// each text of a producer's quoted by quote.
func (f filter) describe(quote func(string) string) string {
	var parts []string
	switch {
	case f.NoKind:
		parts = append(parts, "without a kind")
	case f.Kind != "":
		parts = append(parts, "of kind "+quote(f.Kind))
	}
	if f.Prefix != "" {
		parts = append(parts, "with an ID starting with "+quote(f.Prefix))
	}
	return strings.Join(parts, " ")
}

// Text says which messages f keeps, for a page: "of kind “email” with an
// ID starting with “eu-”"; "" for all. The page escapes it.
func (f filter) Text() string { return f.describe(curly) }

// Short says it briefly, for a button: "of kind “email” starting with
// “eu-”".
func (f filter) Short() string {
	g := f
	g.Prefix = ""
	s := g.describe(curly)
	if f.Prefix != "" {
		s = strings.TrimSpace(s + " starting with " + curly(f.Prefix))
	}
	return s
}

// curly quotes s in curly quotes, its invisible characters shown
// (visible).
func curly(s string) string { return "“" + visible(s) + "”" }

// goQuote quotes s as Go does (%q): for the flash lines, whose texts
// come from the page's query.
func goQuote(s string) string { return fmt.Sprintf("%q", s) }

// visible returns s with the characters a page would not show as
// themselves written as escapes: controls (C0, DEL, C1) as \xNN or
// \u00NN, format characters (the bidi overrides and isolates, zero-width
// ones) and line or paragraph separators as \uXXXX, and bytes that are
// not UTF-8 as \xNN. A kind is a producer's text: html/template escapes
// what HTML would read as markup, and visible what would hide or reorder
// text (a kind "\u202ereverse" shows as such, not reversed).
func visible(s string) string {
	if !strings.ContainsFunc(s, hidden) && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case hidden(r) && r < 0x10000:
			fmt.Fprintf(&b, `\u%04x`, r)
		case hidden(r):
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

// hidden reports whether a page would not show r as itself: a control, a
// format character, a line or paragraph separator.
func hidden(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}
