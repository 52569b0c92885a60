package durable

import (
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// ErrInvalidCursor is wrapped by the error List returns for a cursor it
// did not make for the same state.
var ErrInvalidCursor = errors.New("durable: invalid cursor")

// FormatCursor returns the List cursor of state s for a position in the
// state's order: at is the instant the state orders by (due time, lease
// deadline or time of death) and seq the store's order of writes among
// equal instants. A store whose order is made that way (BoltStore, and
// package memstore) uses it for the cursors of List, and ParseCursor to
// read them back: a cursor is a position, so the next page starts after it
// even if the message it was made from has moved.
//
// The cursor is the state's letter (p, i or d) and the hex of the instant
// (Unix nanoseconds, saturated as the file store keeps them) and of seq.
func FormatCursor(s State, at time.Time, seq uint64) string {
	return cursorOf(s, makeIndexKey(unixNano(at), seq))
}

// cursorOf is the cursor of state s at the index key k.
func cursorOf(s State, k indexKey) string {
	return string(s.String()[0]) + hex.EncodeToString(k[:])
}

// ParseCursor returns the position of a cursor FormatCursor made for state
// s. Any other string, "" included, fails with an error wrapping
// ErrInvalidCursor; List reads "" as the first page before calling it.
func ParseCursor(s State, cursor string) (at time.Time, seq uint64, err error) {
	k, err := parseCursorKey(s, cursor)
	if err != nil {
		return time.Time{}, 0, err
	}
	return fromUnixNano(k.at()), k.seq(), nil
}

// parseCursorKey returns the index key of a cursor of state s.
func parseCursorKey(s State, cursor string) (indexKey, error) {
	if cursor == "" || !s.valid() || cursor[0] != s.String()[0] {
		return indexKey{}, fmt.Errorf("%w: %q is not a cursor of %v messages", ErrInvalidCursor, cursor, s)
	}
	var k indexKey
	b, err := hex.DecodeString(cursor[1:])
	if err != nil || len(b) != len(k) {
		return indexKey{}, fmt.Errorf("%w: %q", ErrInvalidCursor, cursor)
	}
	copy(k[:], b)
	return k, nil
}
