package durable

import "github.com/seed64e23a5c/timingwheel/durable/store"

// The error text a store keeps for a message's last failed attempt.

// MaxErrorLen is the most bytes of an attempt's error text a store keeps
// (Info.LastError, Delivery.LastError): a longer text is cut to it, at a
// UTF-8 character boundary.
const MaxErrorLen = store.MaxErrorLen

// LeaseExpired is the LastError of a message whose lease expired: its
// consumer neither acked nor retried it in time (it crashed, or stalled).
const LeaseExpired = "lease expired"

// errorText is the text a store keeps for err: "" for nil, and at most
// MaxErrorLen bytes.
func errorText(err error) string {
	if err == nil {
		return ""
	}
	return store.TruncateErrorText(err.Error())
}

// TruncateErrorText cuts s to MaxErrorLen bytes, at a UTF-8 character
// boundary.
//
// Deprecated: use store.TruncateErrorText.
func TruncateErrorText(s string) string { return store.TruncateErrorText(s) }
