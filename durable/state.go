package durable

import "github.com/seed64e23a5c/timingwheel/durable/store"

// State is the state a message is in: Pending, InFlight or Dead (see
// store.State).
type State = store.State

// The states of a message. The zero State is none of them.
const (
	// Pending messages wait for their due time, or for a consumer.
	Pending = store.Pending
	// InFlight messages are leased to a consumer.
	InFlight = store.InFlight
	// Dead messages used up their attempts; Requeue brings one back.
	Dead = store.Dead
)

// Info is what a queue holds for one message (see store.Info). Its
// LastError is LeaseExpired if the last attempt's lease expired.
type Info = store.Info
