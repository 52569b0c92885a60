package boltstore

import "errors"

// The errors of the file itself.
var (
	// ErrLocked is returned by Open when another open Store, in this
	// process or another, holds the file.
	ErrLocked = errors.New("durable: file is held by another open queue")
	// ErrCorrupt is returned when the store's file is damaged.
	ErrCorrupt = errors.New("durable: store file is corrupt")
)
