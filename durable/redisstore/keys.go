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
	numKeys
)

var keyNames = [numKeys]string{"pending", "inflight", "dead", "meta", "payload", "seq", "token", "wake"}

// A shard is one hash tag of a queue: {queue} when the queue has one
// shard, {queue:i} for shard i of n otherwise. All its keys and its
// channel carry the tag, so they live in one slot of a Redis Cluster.
type shard struct {
	// keys are the KEYS of the scripts: tw:{tag}:pending and so on.
	keys []string
}

func newShard(tag string) shard {
	keys := make([]string, numKeys)
	for i, name := range keyNames {
		keys[i] = keyPrefix + "{" + tag + "}:" + name
	}
	return shard{keys: keys}
}

// channel is the pub/sub channel the shard's scripts publish on.
func (s shard) channel() string { return s.keys[keyWake] }

// shardTags returns the hash tags of a queue of n shards.
func shardTags(queue string, n int) []string {
	if n == 1 {
		return []string{queue}
	}
	tags := make([]string, n)
	for i := range tags {
		tags[i] = fmt.Sprintf("%s:%d", queue, i)
	}
	return tags
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
