package pgstore

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// Acks and confirmations of leases are many, small and concurrent (each
// worker of a Queue's Run acks its message, and confirms the next): each
// kind goes through a batcher, which sends the calls that arrive while one
// of its statements is under way together, in one statement, as a
// database's group commit does for commits. A lone call waits for nothing
// but its own statement.
//
// The first call finds the batcher idle and leads: it takes every call
// waiting (itself included), runs them as one statement, and, if more
// have arrived meanwhile, hands the lead to the first of them and returns.
// So no caller serves others for longer than one statement after its own.

// ackManySQL deletes the messages of the leases ($2 ids, $3 tokens, in ID
// order, so that two batches lock rows in one order) that are current,
// and returns their tokens.
const ackManySQL = `DELETE FROM {T} t USING unnest($2::bytea[], $3::bigint[]) AS a(id, token)
WHERE t.queue = $1::text AND t.id = a.id AND t.token = a.token AND t.state = 2
RETURNING t.token`

// confirmManySQL hands out the leases that are current, and returns their
// tokens.
const confirmManySQL = `UPDATE {T} t SET held = false FROM unnest($2::bytea[], $3::bigint[]) AS a(id, token)
WHERE t.queue = $1::text AND t.id = a.id AND t.token = a.token AND t.state = 2
RETURNING t.token`

// maxBatch bounds the calls of one statement.
const maxBatch = 500

// A batcher sends the calls of one statement of many leases.
type batcher struct {
	op  string // for errors: "ack", "confirm"
	sql string // of many leases: $1 queue, $2 ids, $3 tokens

	mu      sync.Mutex
	busy    bool // a leader is running a statement
	waiting []*leaseCall
}

// A leaseCall is one caller's lease, waiting in a batcher.
type leaseCall struct {
	ctx   context.Context
	id    []byte
	token int64
	done  chan error    // the outcome
	lead  chan struct{} // closed when the call is to lead the next statement
}

// do runs the call of lease (id, token) in a statement of b, with others.
func (b *batcher) do(ctx context.Context, s *Store, id string, token int64) error {
	c := &leaseCall{ctx: ctx, id: []byte(id), token: token, done: make(chan error, 1), lead: make(chan struct{})}
	b.mu.Lock()
	b.waiting = append(b.waiting, c)
	leading := !b.busy
	b.busy = true
	b.mu.Unlock()
	if !leading {
		select {
		case err := <-c.done:
			return err
		case <-c.lead:
		case <-ctx.Done():
			// The call may still run in a statement: it did or did not
			// happen, as with a statement whose context ends.
			if b.leave(c) {
				return ctx.Err()
			}
			select {
			case err := <-c.done:
				return err
			case <-c.lead:
			}
		}
	}
	b.runBatch(s)
	return <-c.done
}

// leave takes c out of the waiting calls if it is still there and was
// not given the lead (which is given under b.mu), and reports whether it
// did.
func (b *batcher) leave(c *leaseCall) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-c.lead:
		return false // c must lead: the others wait for it
	default:
	}
	i := slices.Index(b.waiting, c)
	if i < 0 {
		return false
	}
	b.waiting = slices.Delete(b.waiting, i, i+1)
	return true
}

// runBatch, run by the leader, sends the calls waiting as one statement,
// gives each its outcome, and passes the lead on.
func (b *batcher) runBatch(s *Store) {
	b.mu.Lock()
	batch := b.take()
	b.mu.Unlock()

	err := b.send(s, batch)
	for _, c := range batch {
		c.done <- err[c]
	}

	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.waiting) == 0 {
		b.busy = false
		return
	}
	close(b.waiting[0].lead)
}

// take removes from the waiting calls those of the next statement: up to
// maxBatch, one per token (a second call on the same lease waits for the
// next statement, which then finds the lease ended, as it would one
// statement after the other).
func (b *batcher) take() []*leaseCall {
	seen := make(map[int64]bool, len(b.waiting))
	var batch, rest []*leaseCall
	for _, c := range b.waiting {
		if len(batch) < maxBatch && !seen[c.token] {
			seen[c.token] = true
			batch = append(batch, c)
		} else {
			rest = append(rest, c)
		}
	}
	b.waiting = rest
	return batch
}

// send runs the statement of batch and returns each call's outcome:
// nil if its lease was current, ErrLeaseLost if not, or the statement's
// error.
func (b *batcher) send(s *Store, batch []*leaseCall) map[*leaseCall]error {
	slices.SortFunc(batch, func(x, y *leaseCall) int { return bytes.Compare(x.id, y.id) })
	ids := make([][]byte, len(batch))
	tokens := make([]int64, len(batch))
	for i, c := range batch {
		ids[i], tokens[i] = c.id, c.token
	}
	ctx, cancel := batchContext(batch)
	defer cancel()
	out := make(map[*leaseCall]error, len(batch))
	fail := func(err error) map[*leaseCall]error {
		for _, c := range batch {
			out[c] = wrap(b.op, err)
		}
		return out
	}
	rows, err := s.pool.Query(ctx, b.sql, s.queue, ids, tokens)
	if err != nil {
		return fail(err)
	}
	done := make(map[int64]bool, len(batch))
	for rows.Next() {
		var tok int64
		if err := rows.Scan(&tok); err != nil {
			rows.Close()
			return fail(err)
		}
		done[tok] = true
	}
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	for _, c := range batch {
		if !done[c.token] {
			out[c] = durable.ErrLeaseLost
		}
	}
	return out
}

// batchContext is the context of a statement of batch: it keeps the
// values of the first call's context and ends at the latest of the calls'
// deadlines (never, if one of them has none), so that no caller's
// cancellation fails the others' calls.
func batchContext(batch []*leaseCall) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, c := range batch {
		d, ok := c.ctx.Deadline()
		if !ok {
			return context.WithCancel(context.WithoutCancel(batch[0].ctx))
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(context.WithoutCancel(batch[0].ctx), latest)
}
