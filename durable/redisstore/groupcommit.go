package redisstore

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// Group commit: the Enqueue, Ack and Confirm calls of a shard that arrive
// while a script call of the same kind is in flight on that shard wait,
// and then go together as one script call, which does the work of each
// call atomically, and answers each on its own (one lease lost among
// acks fails that ack only). A lone caller sends its script call at once
// and waits for nothing but its own round trip: there is no timer, and no
// goroutine of its own. Under load the batches grow with the number of
// callers, and the round trips and script calls per message fall.
//
// There is one committer per shard and kind, so that a batch never mixes
// the keys of two shards (CROSSSLOT on Redis Cluster).

// A groupCall is one Enqueue, Ack or Confirm call waiting in a committer.
type groupCall struct {
	ctx context.Context
	// msgs and nonce are an Enqueue's, id and token an Ack's or Confirm's.
	msgs  []durable.Message
	nonce string
	id    string
	token uint64
	// size counts the messages of the call, and bytes their payload
	// bytes, for the limits of a batch.
	size, bytes int

	err error
	// done receives once: when err is set, or when the call is to lead
	// batch (which holds it, first).
	done  chan struct{}
	batch []*groupCall
}

// A committer queues the calls of one kind on one shard, and has one batch
// of them in flight at a time. It has no goroutine: the caller that finds
// it idle leads, which means it sends its batch itself; when the batch is
// answered, the leader hands the calls that queued meanwhile to the first
// of them, which leads the next batch. So each caller sends at most one
// script call, the one that carries its own work.
type committer struct {
	// send does the work of calls, all alive, in one script call, and sets
	// the err of each; ctx ends when every call's context has ended.
	send func(ctx context.Context, calls []*groupCall)
	// maxSize and maxBytes bound a batch: a call joins one only if the
	// batch stays within both; the first call of a batch always goes.
	maxSize, maxBytes int
	// maxInFlight is the most batches in flight at once (1 or more).
	maxInFlight int

	mu       sync.Mutex
	inFlight int // batches sent and not answered
	queued   []*groupCall

	// batches counts the batches sent, and calls the calls they carried,
	// for the tests.
	batches, calls atomic.Int64
}

// do queues c and returns its error once its batch is answered, or
// ctx.Err() if ctx ends while c is still queued (nothing of c is sent
// then).
func (b *committer) do(ctx context.Context, c *groupCall) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.ctx = ctx
	c.done = make(chan struct{}, 1)
	b.mu.Lock()
	if b.inFlight < b.maxInFlight {
		b.inFlight++
		b.mu.Unlock()
		c.batch = []*groupCall{c}
	} else {
		b.queued = append(b.queued, c)
		b.mu.Unlock()
		if !b.wait(c) {
			return ctx.Err()
		}
		if c.batch == nil {
			return c.err
		}
	}
	b.lead(c.batch)
	return c.err
}

// wait waits until c is answered or is to lead. It returns false if ctx
// ended while c was queued: c is then out of the queue.
func (b *committer) wait(c *groupCall) bool {
	select {
	case <-c.done:
		return true
	case <-c.ctx.Done():
	}
	b.mu.Lock()
	for i, q := range b.queued {
		if q == c {
			b.queued = append(b.queued[:i], b.queued[i+1:]...)
			b.mu.Unlock()
			return false
		}
	}
	b.mu.Unlock()
	// A leader took c already: its outcome, or its turn to lead, comes.
	<-c.done
	return true
}

// lead sends batch, answers its calls but the first (the leader's own),
// and hands the queue over to the next leader.
func (b *committer) lead(batch []*groupCall) {
	defer b.handOver()
	live := batch[:0:0]
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			c.err = err // ended before sending: nothing of it is written
			continue
		}
		live = append(live, c)
	}
	if len(live) > 0 {
		ctx, cancel := batchContext(live)
		b.batches.Add(1)
		b.calls.Add(int64(len(live)))
		b.send(ctx, live)
		cancel()
	}
	for _, c := range batch[1:] {
		c.done <- struct{}{}
	}
}

// handOver gives the calls queued, as many as fit in a batch, to the first
// of them to lead, or marks the committer idle if none is.
func (b *committer) handOver() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queued) == 0 {
		b.inFlight--
		return
	}
	n, size, bytes := 0, 0, 0
	for _, c := range b.queued {
		if n > 0 && (size+c.size > b.maxSize || bytes+c.bytes > b.maxBytes) {
			break
		}
		n, size, bytes = n+1, size+c.size, bytes+c.bytes
	}
	batch := make([]*groupCall, n)
	copy(batch, b.queued)
	b.queued = append(b.queued[:0], b.queued[n:]...)
	batch[0].batch = batch
	batch[0].done <- struct{}{}
}

// batchContext returns the context of a batch's script call: the first
// call's values, done when every call's context is done (with the last
// one's cause), so that a caller who gives up does not fail the others.
func batchContext(calls []*groupCall) (context.Context, context.CancelFunc) {
	if len(calls) == 1 {
		return calls[0].ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(calls[0].ctx))
	var left atomic.Int64
	left.Store(int64(len(calls)))
	stops := make([]func() bool, len(calls))
	for i, c := range calls {
		stops[i] = context.AfterFunc(c.ctx, func() {
			if left.Add(-1) == 0 {
				cancel(context.Cause(c.ctx))
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel(nil)
	}
}
