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

// A record is the value of a message in bucket msgs. Version 3, written
// since the message's Kind, MaxAttempts and Timeout were kept:
//
//	[0]            0x30 | state
//	[1:17]         its key in the state's index: instant and sequence
//	[17:21]        attempt number
//	[21:29]        fencing token of the latest claim
//	[29:37]        the message's due time, in Unix nanoseconds
//	[37:45]        when it was first enqueued, in Unix nanoseconds (0: unknown)
//	[45:47]        n, the length of the last error's text
//	[47:51]        the message's MaxAttempts (0: the queue's)
//	[51:59]        the message's Timeout, in nanoseconds (0: none)
//	[59:61]        k, the length of the message's Kind
//	[61:61+k]      the Kind
//	[61+k:61+k+n]  the last error's text
//	[61+k+n:]      payload
//
// All integers are big-endian. Version 2 is bytes 0 to 47 of version 3
// (with 0x20 in byte 0), then the last error's text and the payload:
// written before the Kind, MaxAttempts and Timeout were kept, its records
// decode with those zero. Version 1, written before that, is bytes 0 to
// 37 (with the state alone in byte 0) and the payload: its records decode
// with no EnqueuedAt and no LastError either. A record of either is
// rewritten in version 3 by the next write to it.
const (
	recordHeaderV1 = 37
	recordHeaderV2 = 47
	recordHeader   = 61
	recordV2       = 0x20
	recordV3       = 0x30
)

// A Kind's length fits the record's two bytes for it (a compile-time
// check: the array's length would be negative).
var _ [math.MaxUint16 - store.MaxKindLen]struct{}

type record struct {
	state       msgState
	key         indexKey
	attempt     uint32
	token       uint64
	due         int64
	enqueuedAt  int64 // Unix nanoseconds, 0 if unknown (a version 1 record)
	kind        string
	maxAttempts uint32 // at most store.MaxMaxAttempts
	timeout     time.Duration
	lastError   string
	payload     []byte
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

// encode writes r in version 3. lastError is cut to MaxErrorLen, which a
// uint16 length holds; kind, checked by Enqueue, is at most MaxKindLen.
func (r *record) encode() []byte {
	text := store.TruncateErrorText(r.lastError)
	b := make([]byte, recordHeader+len(r.kind)+len(text)+len(r.payload))
	b[0] = recordV3 | byte(r.state)
	r.encodeV2Fields(b, text)
	binary.BigEndian.PutUint32(b[47:51], r.maxAttempts)
	binary.BigEndian.PutUint64(b[51:59], uint64(r.timeout))
	binary.BigEndian.PutUint16(b[59:61], uint16(len(r.kind)))
	n := recordHeader
	n += copy(b[n:], r.kind)
	n += copy(b[n:], text)
	copy(b[n:], r.payload)
	return b
}

// encodeV2Fields writes bytes 1 to 47, which versions 2 and 3 share,
// text being the last error's text as written.
func (r *record) encodeV2Fields(b []byte, text string) {
	r.encodeV1Fields(b)
	binary.BigEndian.PutUint64(b[37:45], uint64(r.enqueuedAt))
	binary.BigEndian.PutUint16(b[45:47], uint16(len(text)))
}

// encodeV1Fields writes bytes 1 to 37, which all versions share.
func (r *record) encodeV1Fields(b []byte) {
	copy(b[1:17], r.key[:])
	binary.BigEndian.PutUint32(b[17:21], r.attempt)
	binary.BigEndian.PutUint64(b[21:29], r.token)
	binary.BigEndian.PutUint64(b[29:37], uint64(r.due))
}

// decodeRecord decodes b, of any version, copying the strings and the
// payload out of the file's memory. An empty Kind or error text costs no
// allocation.
func decodeRecord(b []byte) (record, error) {
	if len(b) < recordHeaderV1 {
		return record{}, fmt.Errorf("%w: bad record of %d bytes", ErrCorrupt, len(b))
	}
	version, state := b[0]&0xf0, msgState(b[0]&0x0f)
	if (version != 0 && version != recordV2 && version != recordV3) || state < statePending || state > stateDead {
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
	if version != 0 {
		header := recordHeaderV2
		if version == recordV3 {
			header = recordHeader
		}
		if len(b) < header {
			return record{}, fmt.Errorf("%w: bad record of %d bytes (version %#x)", ErrCorrupt, len(b), version)
		}
		r.enqueuedAt = int64(binary.BigEndian.Uint64(b[37:45]))
		n, k := int(binary.BigEndian.Uint16(b[45:47])), 0
		if version == recordV3 {
			r.maxAttempts = binary.BigEndian.Uint32(b[47:51])
			r.timeout = time.Duration(binary.BigEndian.Uint64(b[51:59]))
			k = int(binary.BigEndian.Uint16(b[59:61]))
			if r.maxAttempts > store.MaxMaxAttempts || r.timeout < 0 {
				return record{}, fmt.Errorf("%w: record with MaxAttempts %d and Timeout %d", ErrCorrupt, r.maxAttempts, int64(r.timeout))
			}
		}
		if len(b) < header+k+n {
			return record{}, fmt.Errorf("%w: record of %d bytes with a kind of %d and an error text of %d", ErrCorrupt, len(b), k, n)
		}
		r.kind = string(b[header : header+k])
		r.lastError = string(b[header+k : header+k+n])
		rest = b[header+k+n:]
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
