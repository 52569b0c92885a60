package redisstore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"

	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/seed64e23a5c/timingwheel/internal/coalesce"
	"github.com/seed64e23a5c/timingwheel/internal/dedup"

	"github.com/redis/go-redis/v9"
)

// Writing messages: Enqueue (in script calls of bounded size, over the
// shards), Cancel and Requeue.

// Enqueue implements store.Store. It validates every message before
// writing any, and writes them with one script call, or, for a large
// batch (more than 500 messages or 4 MiB) or one over several shards,
// with a MULTI/EXEC transaction of several. With shards on Redis Cluster,
// the batch is atomic within each shard only (see WithShards).
//
// Calls of fewer than 64 messages made at the same time share a round
// trip (see coalesce.Coalescer): each is written all or none, as if the
// calls had been made one after the other, and each caller gets the
// outcome of the round trip, on Redis Cluster the outcome for the shards
// of its own messages.
//
// Each round trip has a random nonce, stored with the messages it writes:
// if go-redis sends the call again because its reply was lost, the
// messages already written are left as they are, even if a consumer has
// claimed one meanwhile (see the package documentation).
func (s *Store) Enqueue(ctx context.Context, msgs []store.Message) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	if len(msgs) == 0 {
		return nil
	}
	for i := range msgs {
		if err := msgs[i].Validate(); err != nil {
			return err
		}
	}
	return s.enqueues.Do(ctx, dedup.LastOfEachID(msgs))
}

// aloneEnqueue is the size from which an Enqueue call makes its own
// round trip rather than waiting to share one: such a call gains little
// by sharing, and sent at once it is built while Redis runs the others,
// which keeps Redis busy when many producers send batches.
const aloneEnqueue = 64

// newEnqueueCoalescer returns the coalescer of the Enqueue calls of s.
func newEnqueueCoalescer(s *Store) *coalesce.Coalescer[[]store.Message] {
	return &coalesce.Coalescer[[]store.Message]{
		Yield: true,
		Alone: func(msgs []store.Message) bool { return len(msgs) >= aloneEnqueue },
		Take:  takeEnqueues,
		Send:  s.sendEnqueues,
	}
}

// sendEnqueues writes the messages of the calls of batch in one round
// trip, and gives each call its outcome.
func (s *Store) sendEnqueues(batch []*coalesce.Call[[]store.Message]) {
	all := batch[0].Arg
	if len(batch) > 1 {
		all = nil
		for _, c := range batch {
			all = append(all, c.Arg...)
		}
	}
	ctx, cancel := coalesce.Context(batch)
	errs := s.write(ctx, all)
	cancel()
	for _, c := range batch {
		if !s.cluster {
			c.Err = wrap("enqueue", errs[0]) // one outcome for every shard
			continue
		}
		var own []error
		for _, sh := range s.shardsOf(c.Arg) {
			own = append(own, errs[sh])
		}
		c.Err = wrap("enqueue", errors.Join(own...))
	}
}

// takeEnqueues picks the calls of a script: their messages fit one
// script call and hold no ID twice (the script writes each ID once a
// call, see enqueueScript).
var takeEnqueues = coalesce.Fitting(maxEnqueueScript, maxEnqueueBytes,
	func(msgs []store.Message) (rows, bytes int) {
		for i := range msgs {
			bytes += len(msgs[i].Payload)
		}
		return len(msgs), bytes
	},
	func(msgs []store.Message) iter.Seq[string] {
		return func(yield func(string) bool) {
			for i := range msgs {
				if !yield(msgs[i].ID) {
					return
				}
			}
		}
	})

// shardsOf returns the shards of the messages of msgs, each once.
func (s *Store) shardsOf(msgs []store.Message) []int {
	var shards []int
	for i := range msgs {
		if sh := shardOf(msgs[i].ID, len(s.shards)); !slices.Contains(shards, sh) {
			shards = append(shards, sh)
		}
	}
	return shards
}

// write writes msgs, valid and each ID once, in one round trip, and
// returns the outcome for each shard: the same for all but on Redis
// Cluster, where each shard's transaction is its own.
func (s *Store) write(ctx context.Context, msgs []store.Message) []error {
	nonce := fmt.Sprintf("%016x", rand.Uint64())
	// The script calls of each shard, the messages in their order.
	calls := make([][]*enqueueCall, len(s.shards))
	ncalls := 0
	for i := range msgs {
		m := &msgs[i]
		sh := shardOf(m.ID, len(s.shards))
		cs := calls[sh]
		if len(cs) == 0 || !cs[len(cs)-1].fits(len(m.Payload)) {
			cs = append(cs, &enqueueCall{args: []any{nonce, 0}})
			calls[sh] = cs
			ncalls++
		}
		cs[len(cs)-1].add(m)
	}
	errs := make([]error, len(s.shards))
	all := func(err error) []error {
		for sh := range errs {
			errs[sh] = err
		}
		return errs
	}
	if ncalls == 1 {
		for sh, cs := range calls {
			if len(cs) == 1 {
				_, err := s.run(ctx, enqueueScript, sh, cs[0].args...)
				return all(err)
			}
		}
	}
	if !s.cluster {
		return all(s.enqueueTx(ctx, calls, -1))
	}
	// On a cluster, one transaction per shard, all at once.
	_ = s.parallel(func(sh int) error {
		if len(calls[sh]) > 0 {
			errs[sh] = s.enqueueTx(ctx, calls, sh)
		}
		return errs[sh]
	})
	return errs
}

// An enqueueCall is the arguments of one call of the enqueue script.
type enqueueCall struct {
	args     []any // ARGV: nonce, count, then 5 per message
	n, bytes int   // messages and payload bytes
}

// fits reports whether a message of size bytes of payload may join c: a
// call holds up to maxEnqueueScript messages and maxEnqueueBytes, or one
// larger message alone.
func (c *enqueueCall) fits(size int) bool {
	return c.n < maxEnqueueScript && (c.n == 0 || c.bytes+size <= maxEnqueueBytes)
}

func (c *enqueueCall) add(m *store.Message) {
	score, sub := dueArgs(m.Due)
	c.args = append(c.args, m.ID, m.Payload, score, sub, fieldsArg(m))
	c.n++
	c.bytes += len(m.Payload)
	c.args[1] = c.n
}

// enqueueTx runs the enqueue calls of shard only (all shards if only is
// -1) in one MULTI/EXEC transaction. It uses EVAL, not EVALSHA: a NOSCRIPT
// error inside a transaction would not stop the other calls.
func (s *Store) enqueueTx(ctx context.Context, calls [][]*enqueueCall, only int) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	tx := func(c redis.Cmdable) error {
		_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			for sh, cs := range calls {
				if only >= 0 && sh != only {
					continue
				}
				for _, c := range cs {
					enqueueScript.Eval(ctx, p, s.shards[sh].keys, c.args...)
				}
			}
			return nil
		})
		return err
	}
	if s.opts.replicas == 0 {
		return tx(s.client)
	}
	return s.onReplicas(ctx, max(only, 0), tx)
}

// Cancel implements store.Store.
func (s *Store) Cancel(ctx context.Context, id string) (bool, error) {
	r, err := s.run(ctx, cancelScript, shardOf(id, len(s.shards)), id)
	if err != nil {
		return false, wrap("cancel", err)
	}
	switch r {
	case int64(1):
		return true, nil
	case int64(2):
		return false, store.ErrInFlight
	}
	return false, nil
}

// Requeue implements store.Store.
func (s *Store) Requeue(ctx context.Context, p store.RequeueParams) error {
	id := p.ID
	score, sub := dueArgs(p.Due)
	r, err := s.run(ctx, requeueScript, shardOf(id, len(s.shards)), id, score, sub)
	if err != nil {
		return wrap("requeue", err)
	}
	if r != int64(1) {
		return store.ErrNotFound
	}
	return nil
}
