package redisstore

import (
	"fmt"
	"strings"
)

// keyPrefix starts the name of every key and channel of the package.
const keyPrefix = "tw:"

// Indexes in shard.keys, the KEYS of every script (see scripts.go).
const (
	keyPending = iota
	keyInflight
	keyDead
	keyMeta
	keyPayload
	keySeq
	keyToken
	keyWake
	keyError
	keyEnqueued
	keyFields
	numKeys
)

var keyNames = [numKeys]string{"pending", "inflight", "dead", "meta", "payload", "seq", "token", "wake", "error", "enqueued", "fields"}

// A shard is one hash tag of a queue, and the keys that carry it, so that
// they live in one slot of a Redis Cluster. A queue of one shard has the
// tag {queue} and the keys tw:{queue}:pending and so on; shard i of a
// queue of several has the tag {queue:i} and the keys tw:{queue:i}#pending
// and so on.
//
// No two queues share a key, whatever their names, although queue
// "orders:0" and shard 0 of queue "orders" share a tag (a slot): a queue
// name has no brace (checkQueueName), so in every key the first closing
// brace ends the tag, and the byte after it is ':' for a queue of one
// shard and '#' for a shard. Two keys of queues of one shard are equal
// only if their queue names and key names are; two keys of shards only if
// their queue names, shard numbers (the digits after the tag's last ':')
// and key names are. The layout key, tw:{queue}:shards, is the same for
// every shard count of a queue, which is how New finds a count that
// differs.
type shard struct {
	// keys are the KEYS of the scripts: tw:{tag}:pending and so on.
	keys []string
}

func newShard(tag, sep string) shard {
	keys := make([]string, numKeys)
	for i, name := range keyNames {
		keys[i] = keyPrefix + "{" + tag + "}" + sep + name
	}
	return shard{keys: keys}
}

// channel is the pub/sub channel the shard's scripts publish on.
func (s shard) channel() string { return s.keys[keyWake] }

// newShards returns the shards of a queue of n shards.
func newShards(queue string, n int) []shard {
	if n == 1 {
		return []shard{newShard(queue, ":")}
	}
	shards := make([]shard, n)
	for i := range shards {
		shards[i] = newShard(fmt.Sprintf("%s:%d", queue, i), "#")
	}
	return shards
}

// layoutKey holds a queue's shard count, so that a store opened with
// another count is refused rather than looking for IDs in the wrong shard.
func layoutKey(queue string) string {
	return keyPrefix + "{" + queue + "}:shards"
}

// checkQueueName reports whether queue can name a queue: it must not be
// empty, and braces would change the hash tag.
func checkQueueName(queue string) error {
	if queue == "" {
		return fmt.Errorf("%w: empty", ErrQueueName)
	}
	if strings.ContainsAny(queue, "{}") {
		return fmt.Errorf("%w: %q contains a brace", ErrQueueName, queue)
	}
	return nil
}

// shardOf returns the shard of id among n: FNV-1a of the ID, modulo n.
func shardOf(id string, n int) int {
	if n == 1 {
		return 0
	}
	h := uint32(2166136261)
	for i := 0; i < len(id); i++ {
		h ^= uint32(id[i])
		h *= 16777619
	}
	return int(h % uint32(n))
}
