package store

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// Cursor is a position in the order of a state, for List: every store
// makes its cursors with String and reads them with ParseCursor, so that
// there is one format. A cursor is a position, not a message: the next
// page starts after it even if the message it was made from has moved.
type Cursor struct {
	// State is the state whose order the cursor is a position in.
	State State
	// At is the instant the state orders by (due time, lease deadline or
	// time of death), kept to the nanosecond within the time range.
	At time.Time
	// Seq orders equal instants: the store's order of writes.
	Seq uint64
	// Key, if not empty, orders what At and Seq leave equal, for a store
	// whose order has a further key (Redis orders equal scores by member).
	Key string
}

// String returns the cursor as List returns it: the state's letter (p, i
// or d), 32 hex digits of At (Unix nanoseconds, saturated, sign bit
// flipped so that the digits sort as the instants do) and Seq, and, if
// Key is not empty, a dot and Key in unpadded base64url.
func (c Cursor) String() string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(UnixNano(c.At))^(1<<63))
	binary.BigEndian.PutUint64(b[8:], c.Seq)
	s := string(c.State.String()[0]) + hex.EncodeToString(b[:])
	if c.Key != "" {
		s += "." + base64.RawURLEncoding.EncodeToString([]byte(c.Key))
	}
	return s
}

// ParseCursor reads a cursor that String made for state s. Any other
// string, "" included, fails with an error wrapping ErrInvalidCursor; a
// List reads "" as the first page before calling it.
func ParseCursor(s State, cursor string) (Cursor, error) {
	bad := fmt.Errorf("%w: %q is not a cursor of %v messages", ErrInvalidCursor, cursor, s)
	if cursor == "" || !s.Valid() || cursor[0] != s.String()[0] {
		return Cursor{}, bad
	}
	pos, key, hasKey := strings.Cut(cursor[1:], ".")
	var b [16]byte
	if len(pos) != 2*len(b) {
		return Cursor{}, bad
	}
	if _, err := hex.Decode(b[:], []byte(pos)); err != nil {
		return Cursor{}, bad
	}
	c := Cursor{State: s, At: time.Unix(0, int64(binary.BigEndian.Uint64(b[:8])^(1<<63))), Seq: binary.BigEndian.Uint64(b[8:])}
	if hasKey {
		k, err := base64.RawURLEncoding.DecodeString(key)
		if err != nil || len(k) == 0 {
			return Cursor{}, bad
		}
		c.Key = string(k)
	}
	return c, nil
}
