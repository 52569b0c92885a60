// Package dedup holds what the stores on a server share about a batch of
// messages with repeated IDs (store.Store.Enqueue: of two messages of
// one ID, the later wins, as two calls would write them).
package dedup

import "github.com/seed64e23a5c/timingwheel/durable/store"

// LastOfEachID returns msgs without the messages that a later one of the
// same ID replaces: writing them would change nothing in the end, and a
// store that writes a batch in one statement or script may write each ID
// only once (ON CONFLICT DO UPDATE cannot write a row twice; the Redis
// script's nonce needs each ID once). msgs itself is returned when no ID
// repeats.
func LastOfEachID(msgs []store.Message) []store.Message {
	if len(msgs) <= 1 {
		return msgs
	}
	last := make(map[string]int, len(msgs))
	for i := range msgs {
		last[msgs[i].ID] = i
	}
	if len(last) == len(msgs) {
		return msgs
	}
	out := make([]store.Message, 0, len(last))
	for i := range msgs {
		if last[msgs[i].ID] == i {
			out = append(out, msgs[i])
		}
	}
	return out
}
