package boltstore

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// The layout of a BoltStore file. Bucket msgs maps a message ID to its
// record. Each state has an index bucket whose keys order its messages:
// pending by due time, inflight by lease deadline, dead by time of death;
// each key is the 8-byte instant followed by an 8-byte sequence number
// (the order of the writes, so that equal instants keep it), and its value
// is the ID. Bucket meta holds the counts of each state, so that Stats is
// O(1).
var (
	bucketMsgs     = []byte("msgs")
	bucketPending  = []byte("pending")
	bucketInflight = []byte("inflight")
	bucketDead     = []byte("dead")
	bucketMeta     = []byte("meta")
	// bucketSeries holds the series of Queue.Schedule: name -> JSON of
	// boltSeries (see boltseries.go).
	bucketSeries = []byte("series")
)

type msgState byte

const (
	statePending msgState = iota + 1
	stateInflight
	stateDead
)

// counterKey is the meta key holding the number of messages in state s.
func (s msgState) counterKey() []byte { return []byte{'n', byte(s)} }

// A record is the value of a message in bucket msgs. Version 2, written
// since LastError and EnqueuedAt were kept:
//
//	[0]      0x20 | state
//	[1:17]   its key in the state's index: instant and sequence
//	[17:21]  attempt number
//	[21:29]  fencing token of the latest claim
//	[29:37]  the message's due time, in Unix nanoseconds
//	[37:45]  when it was first enqueued, in Unix nanoseconds (0: unknown)
//	[45:47]  n, the length of the last error's text
//	[47:47+n] the last error's text
//	[47+n:]  payload
//
// Version 1, written before, is the same without bytes 37 to 47 (and
// state alone in byte 0): its records decode with no EnqueuedAt and no
// LastError, and are rewritten in version 2 by the next write to them.
const (
	recordHeaderV1 = 37
	recordHeader   = 47
	recordV2       = 0x20
)

type record struct {
	state      msgState
	key        indexKey
	attempt    uint32
	token      uint64
	due        int64
	enqueuedAt int64 // Unix nanoseconds, 0 if unknown (a version 1 record)
	lastError  string
	payload    []byte
}

// indexKey is a key of an index bucket: an instant, then a sequence
// number, both big-endian so that byte order is time order.
type indexKey [16]byte

func makeIndexKey(at int64, seq uint64) indexKey {
	var k indexKey
	binary.BigEndian.PutUint64(k[:8], uint64(at)^(1<<63)) // signed order
	binary.BigEndian.PutUint64(k[8:], seq)
	return k
}

func (k indexKey) at() int64 { return int64(binary.BigEndian.Uint64(k[:8]) ^ (1 << 63)) }

func (k indexKey) seq() uint64 { return binary.BigEndian.Uint64(k[8:]) }

// encode writes r in version 2. lastError is cut to MaxErrorLen, which a
// uint16 length holds.
func (r *record) encode() []byte {
	text := store.TruncateErrorText(r.lastError)
	b := make([]byte, recordHeader+len(text)+len(r.payload))
	b[0] = recordV2 | byte(r.state)
	r.encodeV1Fields(b)
	binary.BigEndian.PutUint64(b[37:45], uint64(r.enqueuedAt))
	binary.BigEndian.PutUint16(b[45:47], uint16(len(text)))
	n := copy(b[recordHeader:], text)
	copy(b[recordHeader+n:], r.payload)
	return b
}

// encodeV1Fields writes bytes 1 to 37, which both versions share.
func (r *record) encodeV1Fields(b []byte) {
	copy(b[1:17], r.key[:])
	binary.BigEndian.PutUint32(b[17:21], r.attempt)
	binary.BigEndian.PutUint64(b[21:29], r.token)
	binary.BigEndian.PutUint64(b[29:37], uint64(r.due))
}

// decodeRecord decodes b, of either version, copying the payload out of
// the file's memory.
func decodeRecord(b []byte) (record, error) {
	if len(b) < recordHeaderV1 {
		return record{}, fmt.Errorf("%w: bad record of %d bytes", ErrCorrupt, len(b))
	}
	version, state := b[0]&0xf0, msgState(b[0]&0x0f)
	if (version != 0 && version != recordV2) || state < statePending || state > stateDead {
		return record{}, fmt.Errorf("%w: bad record of %d bytes (first byte %#x)", ErrCorrupt, len(b), b[0])
	}
	r := record{
		state:   state,
		attempt: binary.BigEndian.Uint32(b[17:21]),
		token:   binary.BigEndian.Uint64(b[21:29]),
		due:     int64(binary.BigEndian.Uint64(b[29:37])),
	}
	copy(r.key[:], b[1:17])
	rest := b[recordHeaderV1:]
	if version == recordV2 {
		if len(b) < recordHeader {
			return record{}, fmt.Errorf("%w: bad record of %d bytes", ErrCorrupt, len(b))
		}
		r.enqueuedAt = int64(binary.BigEndian.Uint64(b[37:45]))
		n := int(binary.BigEndian.Uint16(b[45:47]))
		if len(b) < recordHeader+n {
			return record{}, fmt.Errorf("%w: record of %d bytes with an error text of %d", ErrCorrupt, len(b), n)
		}
		r.lastError = string(b[recordHeader : recordHeader+n])
		rest = b[recordHeader+n:]
	}
	r.payload = append([]byte(nil), rest...)
	return r, nil
}

// addDuration is at+d in Unix nanoseconds, saturating instead of
// overflowing.
func addDuration(at int64, d time.Duration) int64 {
	if d > 0 && at > math.MaxInt64-int64(d) {
		return math.MaxInt64
	}
	if d < 0 && at < math.MinInt64-int64(d) {
		return math.MinInt64
	}
	return at + int64(d)
}

func fromUnixNano(n int64) time.Time { return time.Unix(0, n) }
