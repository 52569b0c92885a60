package pgstore

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// A List cursor is a position in the order of a state: the state's letter
// (p, i or d), then 32 hex digits, of the instant the state orders by in
// microseconds since 1970 (its sign bit flipped, so that the digits sort
// as the instants do) and of the seq. It is the shape of
// durable.FormatCursor's, in microseconds: every instant PostgreSQL keeps
// fits, where nanoseconds would saturate beyond 2262.

// formatCursor returns the cursor of state st at the position (at, seq).
func formatCursor(st durable.State, at time.Time, seq int64) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(at.UnixMicro())^(1<<63))
	binary.BigEndian.PutUint64(b[8:], uint64(seq))
	return string(st.String()[0]) + hex.EncodeToString(b[:])
}

// parseCursor returns the position of a cursor of state st, or an error
// wrapping durable.ErrInvalidCursor.
func parseCursor(st durable.State, cursor string) (time.Time, int64, error) {
	var b [16]byte
	if len(cursor) != 1+2*len(b) || cursor[0] != st.String()[0] {
		return time.Time{}, 0, fmt.Errorf("%w: %q is not a cursor of %v messages", durable.ErrInvalidCursor, cursor, st)
	}
	if _, err := hex.Decode(b[:], []byte(cursor[1:])); err != nil {
		return time.Time{}, 0, fmt.Errorf("%w: %q", durable.ErrInvalidCursor, cursor)
	}
	us := int64(binary.BigEndian.Uint64(b[:8]) ^ (1 << 63))
	seq := binary.BigEndian.Uint64(b[8:])
	if seq > 1<<63-1 {
		return time.Time{}, 0, fmt.Errorf("%w: %q", durable.ErrInvalidCursor, cursor)
	}
	return time.UnixMicro(us), int64(seq), nil
}
