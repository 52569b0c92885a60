package pgstore

import (
	"bytes"
	"slices"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/internal/coalesce"
)

// Acks and confirmations of leases are many, small and concurrent (each
// worker of a Queue's Run acks its message, and confirms the next), and
// so are the enqueues of many producers: each kind goes through a
// coalesce.Coalescer, which sends the calls that arrive while one of its
// statements is under way together, in one statement. A lone call waits
// for nothing but its own statement.

// Both statements of many leases name the IDs twice: in the join with the
// list of leases, and as "t.id = ANY ($2)", which makes the planner read
// the table through its primary key for those IDs only. Without it, for
// a queue that the table's statistics do not know yet (estimated at one
// row), the join was planned as a scan of every message in flight in the
// queue for each statement.

// ackManySQL deletes the messages of the leases ($2 ids, $3 tokens, in ID
// order, so that two batches lock rows in one order) that are current,
// and returns their tokens, each with true (done).
const ackManySQL = `DELETE FROM {T} t USING unnest($2::bytea[], $3::bigint[]) AS a(id, token)
WHERE t.queue = $1::text AND t.id = ANY ($2::bytea[]) AND t.id = a.id AND t.token = a.token AND t.state = 2
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
	WHERE t.queue = $1::text AND t.id = ANY ($2::bytea[]) AND t.id = a.id AND t.token = a.token AND t.state = 2
		AND NOT (t.held AND (SELECT paused FROM p))
	RETURNING t.token
)
SELECT u.token, true FROM u
UNION ALL
SELECT t.token, false FROM {T} t, unnest($2::bytea[], $3::bigint[]) AS a(id, token)
WHERE (SELECT paused FROM p) AND t.queue = $1::text AND t.id = ANY ($2::bytea[]) AND t.id = a.id
	AND t.token = a.token AND t.state = 2 AND t.held`

// maxBatch bounds the calls of one statement of many leases.
const maxBatch = 500

// A lease is the argument of an ack or a confirmation.
type lease struct {
	id    []byte
	token int64
}

// newLeaseCoalescer returns the coalescer of the statement sql of many
// leases ($1 queue, $2 ids, $3 tokens, returning the token of each lease
// it changed with true, and of each it refused for a pause with false),
// for the operation op.
func newLeaseCoalescer(s *Store, op, sql string, yield bool) *coalesce.Coalescer[lease] {
	return &coalesce.Coalescer[lease]{
		Yield: yield,
		Take:  coalesce.Distinct(maxBatch, func(l lease) int64 { return l.token }),
		Send:  func(batch []*coalesce.Call[lease]) { sendLeases(s, op, sql, batch) },
	}
}

// sendLeases runs sql for the leases of batch: a call's outcome is nil if
// its lease was current, ErrLeaseLost if not, ErrPaused if the statement
// says so (a Confirm while paused), or the statement's error.
func sendLeases(s *Store, op, sql string, batch []*coalesce.Call[lease]) {
	slices.SortFunc(batch, func(x, y *coalesce.Call[lease]) int { return bytes.Compare(x.Arg.id, y.Arg.id) })
	ids := make([][]byte, len(batch))
	tokens := make([]int64, len(batch))
	for i, c := range batch {
		ids[i], tokens[i] = c.Arg.id, c.Arg.token
	}
	ctx, cancel := coalesce.Context(batch)
	defer cancel()
	fail := func(err error) {
		for _, c := range batch {
			c.Err = wrap(op, err)
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
		err, ok := outcome[c.Arg.token]
		if !ok {
			err = durable.ErrLeaseLost
		}
		c.Err = err
	}
}
