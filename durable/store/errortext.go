package store

import "unicode/utf8"

// MaxErrorLen is the most bytes of an attempt's error text a store keeps
// (Info.LastError, RetryParams.Error): the queue cuts a longer text to it
// with TruncateErrorText before it gives it to Retry.
const MaxErrorLen = 4 << 10

// TruncateErrorText cuts s to MaxErrorLen bytes, at a UTF-8 character
// boundary.
func TruncateErrorText(s string) string {
	if len(s) <= MaxErrorLen {
		return s
	}
	cut := MaxErrorLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
