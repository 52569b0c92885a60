package redisstore

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// Bounds of a batch of the group commit, so that one script call stays
// short: maxBatchMessages messages (of the Enqueue calls, or Ack or
// Confirm calls) and maxEnqueueBytes of payloads. A call larger than that
// (an Enqueue of up to maxEnqueueScript messages) goes alone.
const maxBatchMessages = 128

// batchesInFlight is the most script calls of one kind in flight on one
// shard. One is the classic group commit, and makes the largest batches;
// two or more (measured on a shared 2-core machine, 8 producers) made no
// difference to throughput there, and sent more script calls.
const batchesInFlight = 1

// shardCommits are the group commits of one shard, one per kind of call.
type shardCommits struct {
	enqueue, ack, confirm committer
}

// newCommits returns the group commits of every shard of s.
func (s *Store) newCommits() []shardCommits {
	cs := make([]shardCommits, len(s.shards))
	for sh := range cs {
		c := &cs[sh]
		c.enqueue.send = func(ctx context.Context, calls []*groupCall) { s.sendEnqueues(ctx, sh, calls) }
		c.ack.send = func(ctx context.Context, calls []*groupCall) { s.sendLeaseCalls(ctx, sh, ackScript, "ack", calls) }
		c.confirm.send = func(ctx context.Context, calls []*groupCall) {
			s.sendLeaseCalls(ctx, sh, confirmScript, "confirm", calls)
		}
		for _, b := range []*committer{&c.enqueue, &c.ack, &c.confirm} {
			b.maxSize, b.maxBytes, b.maxInFlight = maxBatchMessages, maxEnqueueBytes, batchesInFlight
		}
	}
	return cs
}

// sendEnqueues writes the messages of Enqueue calls of shard sh with one
// enqueue script call, in the order of the calls, each message with its
// call's nonce. A message that a later call of the batch replaces is left
// out, as within a call (lastOfEachID): the end is the same as writing
// both, and no script call writes an ID twice, which the nonce requires.
func (s *Store) sendEnqueues(ctx context.Context, sh int, calls []*groupCall) {
	type ref struct{ call, msg int }
	var last map[string]ref
	if len(calls) > 1 {
		last = make(map[string]ref)
		for i, c := range calls {
			for j := range c.msgs {
				last[c.msgs[j].ID] = ref{i, j}
			}
		}
	}
	ec := newEnqueueCall()
	for i, c := range calls {
		for j := range c.msgs {
			m := &c.msgs[j]
			if last == nil || last[m.ID] == (ref{i, j}) {
				ec.add(c.nonce, m)
			}
		}
	}
	_, err := s.run(ctx, enqueueScript, sh, ec.args...)
	err = wrap("enqueue", err)
	for _, c := range calls {
		c.err = err
	}
}

// sendLeaseCalls runs the Ack or Confirm calls of shard sh with one call
// of sc (ackScript or confirmScript), whose reply has 1 for each call that
// held its lease and 0 for each that lost it.
func (s *Store) sendLeaseCalls(ctx context.Context, sh int, sc *redis.Script, op string, calls []*groupCall) {
	args := make([]any, 0, 2*len(calls))
	for _, c := range calls {
		args = append(args, c.id, tokenString(c.token))
	}
	r, err := s.run(ctx, sc, sh, args...)
	var held []int64
	if err == nil {
		var a []any
		if a, err = replyArray(r, len(calls)); err == nil {
			held, err = replyInts(a)
		}
	}
	for i, c := range calls {
		switch {
		case err != nil:
			c.err = wrap(op, err)
		case held[i] != 1:
			c.err = durable.ErrLeaseLost
		default:
			c.err = nil
		}
	}
}
