package pgstore

import (
	"bytes"
	"context"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// Acks and confirmations of leases are many, small and concurrent (each
// worker of a Queue's Run acks its message, and confirms the next), and
// so are the enqueues of many producers: each kind goes through a
// coalescer, which sends the calls that arrive while one of its
// statements is under way together, in one statement, as a database's
// group commit does for commits. A lone call waits for nothing but its
// own statement.
//
// The first call finds the coalescer idle and leads: it takes every call
// waiting (itself included), runs them as one statement, and, if more
// have arrived meanwhile, hands the lead to the first of them and returns.
// So no caller serves others for longer than one statement after its own.

// ackManySQL deletes the messages of the leases ($2 ids, $3 tokens, in ID
// order, so that two batches lock rows in one order) that are current,
// and returns their tokens, each with true (done).
const ackManySQL = `DELETE FROM {T} t USING unnest($2::bytea[], $3::bigint[]) AS a(id, token)
WHERE t.queue = $1::text AND t.id = a.id AND t.token = a.token AND t.state = 2
RETURNING t.token, true`

// confirmManySQL hands out the leases that are current, and returns their
// tokens with true; while the queue is paused, it leaves those claimed
// ahead and not confirmed yet as they are, and returns their tokens with
// false (see durable.ErrPaused).
const confirmManySQL = `WITH p AS MATERIALIZED (
	SELECT EXISTS (SELECT 1 FROM {QUEUES} q WHERE q.queue = $1::text AND q.paused) AS paused
),
u AS (
	UPDATE {T} t SET held = false FROM unnest($2::bytea[], $3::bigint[]) AS a(id, token)
	WHERE t.queue = $1::text AND t.id = a.id AND t.token = a.token AND t.state = 2
		AND NOT (t.held AND (SELECT paused FROM p))
	RETURNING t.token
)
SELECT u.token, true FROM u
UNION ALL
SELECT t.token, false FROM {T} t, unnest($2::bytea[], $3::bigint[]) AS a(id, token)
WHERE (SELECT paused FROM p) AND t.queue = $1::text AND t.id = a.id AND t.token = a.token
	AND t.state = 2 AND t.held`

// maxBatch bounds the calls of one statement of many leases.
const maxBatch = 500

// A coalescer sends the calls of one kind that arrive while one of its
// statements is under way together, in the next statement. take picks
// the calls of a statement among those waiting, in order, and send runs
// the statement and gives each call its outcome (call.err).
type coalescer[T any] struct {
	take func(waiting []*call[T]) (batch, rest []*call[T])
	send func(batch []*call[T])
	// yield lets the goroutines that can run go first before the leader
	// takes a batch, so that more join it: for the producers' enqueues,
	// not on the deliveries' path (acks, confirmations), where it made
	// the lateness of deliveries worse.
	yield bool

	mu      sync.Mutex
	busy    bool // a leader is running a statement
	waiting []*call[T]
}

// A call is one caller's request, waiting in a coalescer.
type call[T any] struct {
	ctx  context.Context
	arg  T
	err  error         // the outcome, set by send
	done chan struct{} // closed once err is set
	lead chan struct{} // closed when the call is to lead the next statement
}

// do runs arg in a statement of c, with other calls, and returns its
// outcome.
func (c *coalescer[T]) do(ctx context.Context, arg T) error {
	me := &call[T]{ctx: ctx, arg: arg, done: make(chan struct{}), lead: make(chan struct{})}
	c.mu.Lock()
	c.waiting = append(c.waiting, me)
	leading := !c.busy
	c.busy = true
	c.mu.Unlock()
	if !leading {
		select {
		case <-me.done:
			return me.err
		case <-me.lead:
		case <-ctx.Done():
			// The call may still run in a statement: it did or did not
			// happen, as with a statement whose context ends.
			if c.leave(me) {
				return ctx.Err()
			}
			select {
			case <-me.done:
				return me.err
			case <-me.lead:
			}
		}
	}
	c.runBatch()
	<-me.done
	return me.err
}

// leave takes me out of the waiting calls if it is still there and was
// not given the lead (which is given under c.mu), and reports whether it
// did.
func (c *coalescer[T]) leave(me *call[T]) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-me.lead:
		return false // me must lead: the others wait for it
	default:
	}
	i := slices.Index(c.waiting, me)
	if i < 0 {
		return false
	}
	c.waiting = slices.Delete(c.waiting, i, i+1)
	return true
}

// runBatch, run by the leader, sends the calls waiting that take picks
// as one statement, and passes the lead on to the first call left.
func (c *coalescer[T]) runBatch() {
	if c.yield {
		// The callers of the last statement were just woken, and many
		// call again at once (a producer's next enqueue): let them run
		// before the batch is taken, so that they join it rather than the
		// next. With nobody else to run, this returns at once.
		runtime.Gosched()
	}
	c.mu.Lock()
	batch, rest := c.take(c.waiting)
	c.waiting = rest
	c.mu.Unlock()

	c.send(batch)
	for _, b := range batch {
		close(b.done)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.waiting) == 0 {
		c.busy = false
		return
	}
	close(c.waiting[0].lead)
}

// A lease is the argument of an ack or a confirmation.
type lease struct {
	id    []byte
	token int64
}

// newLeaseCoalescer returns the coalescer of the statement sql of many
// leases ($1 queue, $2 ids, $3 tokens, returning the token of each lease
// it changed with true, and of each it refused for a pause with false),
// for the operation op.
func newLeaseCoalescer(s *Store, op, sql string, yield bool) *coalescer[lease] {
	return &coalescer[lease]{
		yield: yield,
		take:  takeLeases,
		send:  func(batch []*call[lease]) { sendLeases(s, op, sql, batch) },
	}
}

// takeLeases picks up to maxBatch calls, one per token: a second call on
// the same lease waits for the next statement, which then finds the lease
// ended, as it would one statement after the other.
func takeLeases(waiting []*call[lease]) (batch, rest []*call[lease]) {
	seen := make(map[int64]bool, len(waiting))
	for _, c := range waiting {
		if len(batch) < maxBatch && !seen[c.arg.token] {
			seen[c.arg.token] = true
			batch = append(batch, c)
		} else {
			rest = append(rest, c)
		}
	}
	return batch, rest
}

// sendLeases runs sql for the leases of batch: a call's outcome is nil if
// its lease was current, ErrLeaseLost if not, ErrPaused if the statement
// says so (a Confirm while paused), or the statement's error.
func sendLeases(s *Store, op, sql string, batch []*call[lease]) {
	slices.SortFunc(batch, func(x, y *call[lease]) int { return bytes.Compare(x.arg.id, y.arg.id) })
	ids := make([][]byte, len(batch))
	tokens := make([]int64, len(batch))
	for i, c := range batch {
		ids[i], tokens[i] = c.arg.id, c.arg.token
	}
	ctx, cancel := batchContext(batch)
	defer cancel()
	fail := func(err error) {
		for _, c := range batch {
			c.err = wrap(op, err)
		}
	}
	rows, err := s.pool.Query(ctx, sql, s.queue, ids, tokens)
	if err != nil {
		fail(err)
		return
	}
	outcome := make(map[int64]error, len(batch))
	for rows.Next() {
		var (
			tok  int64
			done bool
		)
		if err := rows.Scan(&tok, &done); err != nil {
			rows.Close()
			fail(err)
			return
		}
		if done {
			outcome[tok] = nil
		} else {
			outcome[tok] = durable.ErrPaused
		}
	}
	if err := rows.Err(); err != nil {
		fail(err)
		return
	}
	for _, c := range batch {
		err, ok := outcome[c.arg.token]
		if !ok {
			err = durable.ErrLeaseLost
		}
		c.err = err
	}
}

// batchContext is the context of a statement of batch: it keeps the
// values of the first call's context and ends at the latest of the calls'
// deadlines (never, if one of them has none), so that no caller's
// cancellation fails the others' calls.
func batchContext[T any](batch []*call[T]) (context.Context, context.CancelFunc) {
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
