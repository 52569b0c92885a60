package durable

import (
	"unicode/utf8"
)

// The error text a store keeps for a message's last failed attempt.

// MaxErrorLen is the most bytes of an attempt's error text a store keeps
// (Info.LastError, Delivery.LastError): a longer text is cut to it, at a
// UTF-8 character boundary.
const MaxErrorLen = 4 << 10

// LeaseExpired is the LastError of a message whose lease expired: its
// consumer neither acked nor retried it in time (it crashed, or stalled).
const LeaseExpired = "lease expired"

// errorText is the text a store keeps for err: "" for nil, and at most
// MaxErrorLen bytes.
func errorText(err error) string {
	if err == nil {
		return ""
	}
	return TruncateErrorText(err.Error())
}

// TruncateErrorText cuts s to MaxErrorLen bytes, at a UTF-8 character
// boundary. A Queue calls it on an error's text before it gives the text
// to Store.Retry, which keeps what it is given.
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
