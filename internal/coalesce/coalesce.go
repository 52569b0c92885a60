// Package coalesce sends the calls of one kind that arrive while one of
// their round trips to a server is under way together, in the next round
// trip, as a database's group commit does for commits. The stores on a
// server (pgstore, redisstore) share it for the small calls that many
// goroutines make at once: enqueues, acks, confirmations.
//
// A call that finds no batch under way leads: it takes every call
// waiting along with its own, sends them as one batch, and, if more have
// arrived meanwhile, hands the lead to the first of them and returns. So a lone
// call waits for nothing but its own round trip, and no caller serves
// others for longer than one batch after its own.
package coalesce

import (
	"context"
	"iter"
	"runtime"
	"slices"
	"sync"
	"time"
)

// A Coalescer sends the calls that arrive while one of its batches is
// under way together, in the next batch. Its zero value is not usable:
// Send must be set; Take, Yield and Alone may be left zero.
type Coalescer[T any] struct {
	// Take picks the calls of the next batch among those waiting, in
	// their order of arrival, and must pick the first (the leader's own);
	// rest waits for a later batch. Nil takes every call waiting.
	Take func(waiting []*Call[T]) (batch, rest []*Call[T])
	// Send sends batch, and sets each call's Err to its outcome.
	Send func(batch []*Call[T])
	// Yield lets the goroutines that can run go first before the leader
	// takes a batch, so that more join it: for producers' calls, whose
	// callers call again as soon as they are answered; not on the path of
	// deliveries, whose lateness it would raise.
	Yield bool
	// Alone, if set, picks the calls to send at once, each in a batch of
	// its own, without waiting for the batches under way or leading one:
	// calls large enough to gain little by sharing, which then go to the
	// server side by side rather than one batch at a time.
	Alone func(arg T) bool

	mu      sync.Mutex
	leading bool       // a call leads a batch, or was given the lead
	waiting []*Call[T] // calls waiting for a leader, in order of arrival
}

// A Call is one caller's request, waiting in a Coalescer.
type Call[T any] struct {
	// Ctx is the caller's context; see Context for a batch's.
	Ctx context.Context
	// Arg is what the caller asks.
	Arg T
	// Err is the call's outcome, set by Send.
	Err error

	done chan struct{} // closed once Err is set
	lead chan struct{} // closed when the call is to lead the next batch
}

// Do sends arg in a batch of c, with other calls (alone, at once, if
// c.Alone picks it), and returns its outcome. If ctx has ended, Do returns its error at once. If ctx ends
// while the call waits for a batch, Do returns
// ctx.Err() and the call is not sent, unless it is being taken in a batch
// or given the lead at that moment: then, as once it is sent, Do returns
// its outcome, as a round trip under way would.
func (c *Coalescer[T]) Do(ctx context.Context, arg T) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.Alone != nil && c.Alone(arg) {
		me := &Call[T]{Ctx: ctx, Arg: arg}
		c.Send([]*Call[T]{me})
		return me.Err
	}
	me := &Call[T]{Ctx: ctx, Arg: arg, done: make(chan struct{}), lead: make(chan struct{})}
	c.mu.Lock()
	leading := !c.leading
	if leading {
		c.leading = true
	} else {
		c.waiting = append(c.waiting, me)
	}
	c.mu.Unlock()
	if !leading {
		select {
		case <-me.done:
			return me.Err
		case <-me.lead:
		case <-ctx.Done():
			if c.leave(me) {
				return ctx.Err()
			}
			select {
			case <-me.done:
				return me.Err
			case <-me.lead:
			}
		}
	}
	c.runBatch(me)
	<-me.done
	return me.Err
}

// leave takes me out of the waiting calls if it is still there, and
// reports whether it did: a call given the lead (which takes it out,
// under c.mu) must lead, and one taken in a batch has its outcome coming.
func (c *Coalescer[T]) leave(me *Call[T]) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.waiting, me)
	if i < 0 {
		return false
	}
	c.waiting = slices.Delete(c.waiting, i, i+1)
	return true
}

// runBatch, run by the leader me, sends me and the calls waiting that
// Take picks as one batch, and passes the lead on to the first call left.
func (c *Coalescer[T]) runBatch(me *Call[T]) {
	if c.Yield {
		// The callers of the last batch were just woken, and many call
		// again at once: let them run before the batch is taken, so that
		// they join it rather than the next. With nobody else to run,
		// this returns at once.
		runtime.Gosched()
	}
	c.mu.Lock()
	candidates := append([]*Call[T]{me}, c.waiting...)
	var batch []*Call[T]
	if c.Take == nil {
		batch, c.waiting = candidates, nil
	} else {
		batch, c.waiting = c.Take(candidates)
	}
	c.mu.Unlock()
	if len(batch) == 0 || batch[0] != me {
		// The leader would wait for an outcome nobody gives.
		panic("coalesce: Take did not pick the first call it was given")
	}

	c.Send(batch)
	for _, b := range batch {
		close(b.done)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.waiting) == 0 {
		c.leading = false
		return
	}
	next := c.waiting[0]
	c.waiting = slices.Delete(c.waiting, 0, 1)
	close(next.lead)
}

// Waiting returns how many calls wait for a batch (those under way in one
// are not counted).
func (c *Coalescer[T]) Waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiting)
}

// Context returns the context of a round trip of batch: the call's own
// for a batch of one; otherwise one that keeps the values of the first
// call's context and ends at the latest of the calls' deadlines (never, if
// one of them has none), so that no caller's cancellation fails the
// others' calls.
func Context[T any](batch []*Call[T]) (context.Context, context.CancelFunc) {
	if len(batch) == 1 {
		return batch[0].Ctx, func() {} // a lone call keeps its own context
	}
	var latest time.Time
	for _, c := range batch {
		d, ok := c.Ctx.Deadline()
		if !ok {
			return context.WithCancel(context.WithoutCancel(batch[0].Ctx))
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(context.WithoutCancel(batch[0].Ctx), latest)
}

// Distinct returns a Take that picks up to limit calls (at least one),
// no two of the same key: a second call with a key waits for a later batch, which sees
// what the first did, as if the calls had been made one after the other.
func Distinct[T any, K comparable](limit int, key func(T) K) func(waiting []*Call[T]) (batch, rest []*Call[T]) {
	limit = max(limit, 1) // the first call, at least
	return func(waiting []*Call[T]) (batch, rest []*Call[T]) {
		seen := make(map[K]bool, len(waiting))
		for _, c := range waiting {
			k := key(c.Arg)
			if len(batch) < limit && !seen[k] {
				seen[k] = true
				batch = append(batch, c)
			} else {
				rest = append(rest, c)
			}
		}
		return batch, rest
	}
}

// Fitting returns a Take for calls that write rows with keys: it picks
// the first calls waiting whose rows fit one batch together (at most
// maxRows rows and maxBytes bytes, which size reports of a call; the
// first call whatever its size) and have no key in common; the first that
// does not fit waits for a later batch, and so do the calls after it, so
// that calls keep their order.
func Fitting[T any](maxRows, maxBytes int, size func(T) (rows, bytes int), keys func(T) iter.Seq[string]) func(waiting []*Call[T]) (batch, rest []*Call[T]) {
	return func(waiting []*Call[T]) (batch, rest []*Call[T]) {
		if len(waiting) == 1 {
			return waiting, nil
		}
		var rows, bytes int
		seen := make(map[string]bool)
		for i, c := range waiting {
			r, b := size(c.Arg)
			if len(batch) > 0 && (rows+r > maxRows || bytes+b > maxBytes || holdsAny(keys(c.Arg), seen)) {
				return batch, waiting[i:]
			}
			batch = append(batch, c)
			rows, bytes = rows+r, bytes+b
			for k := range keys(c.Arg) {
				seen[k] = true
			}
		}
		return batch, nil
	}
}

// holdsAny reports whether keys has one in seen.
func holdsAny(keys iter.Seq[string], seen map[string]bool) bool {
	for k := range keys {
		if seen[k] {
			return true
		}
	}
	return false
}
