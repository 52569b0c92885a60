package pgstore

import (
	"bytes"
	"slices"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/internal/coalesce"
)

// Acks and confirmations of leases are many, small and concurrent (each
// worker of a Queue's Run acks its message, and confirms the next), and
// so are the enqueues of many producers: the acks and confirmations go
// through one coalesce.Coalescer, the enqueues through another, which
// sends the calls that arrive while one of its statements is under way
// together, in one statement, so one commit. A lone call waits for
// nothing but its own statement.

// The statement of many leases names the IDs twice: in the joins with the
// lists of leases, and as "t.id = ANY ($2)", which makes the planner read
// the table through its primary key for those IDs only. Without it, for
// a queue that the table's statistics do not know yet (estimated at one
// row), the join was planned as a scan of every message in flight in the
// queue for each statement.

// leasesSQL acks the leases of $2 ids, $3 tokens and confirms those of $4
// ids, $5 tokens (no ID twice), and returns the ID of each lease it ended
// or handed out with true, and of each confirmation it refused while the
// queue is paused with false (see durable.ErrPaused): then it leaves those
// claimed ahead and not confirmed yet as they are. A lease that is not
// current matches no row. l locks the rows in ID order first, whatever
// plan reads them after, as an Enqueue locks its rows: two statements of
// many rows never wait for each other in opposite orders.
const leasesSQL = `WITH p AS MATERIALIZED (
	SELECT EXISTS (SELECT 1 FROM {QUEUES} q WHERE q.queue = $1::text AND q.paused) AS paused
),
l AS MATERIALIZED (
	SELECT t.id FROM {T} t
	WHERE t.queue = $1::text AND t.id = ANY ($2::bytea[] || $4::bytea[])
	ORDER BY t.id FOR UPDATE
),
d AS (
	DELETE FROM {T} t USING unnest($2::bytea[], $3::bigint[]) AS a(id, token)
	WHERE (SELECT count(*) FROM l) >= 0 AND t.queue = $1::text AND t.id = ANY ($2::bytea[]) AND t.id = a.id
		AND t.token = a.token AND t.state = 2
	RETURNING t.id
),
u AS (
	UPDATE {T} t SET held = false FROM unnest($4::bytea[], $5::bigint[]) AS a(id, token)
	WHERE (SELECT count(*) FROM l) >= 0 AND t.queue = $1::text AND t.id = ANY ($4::bytea[]) AND t.id = a.id
		AND t.token = a.token AND t.state = 2 AND NOT (t.held AND (SELECT paused FROM p))
	RETURNING t.id
)
SELECT d.id, true FROM d
UNION ALL
SELECT u.id, true FROM u
UNION ALL
SELECT t.id, false FROM {T} t, unnest($4::bytea[], $5::bigint[]) AS a(id, token)
WHERE (SELECT paused FROM p) AND t.queue = $1::text AND t.id = ANY ($4::bytea[]) AND t.id = a.id
	AND t.token = a.token AND t.state = 2 AND t.held`

// maxBatch bounds the calls of one statement of many leases.
const maxBatch = 500

// A lease is the argument of an ack or a confirmation.
type lease struct {
	id      []byte
	token   int64
	confirm bool // a confirmation, not an ack
}

func (l lease) op() string {
	if l.confirm {
		return "confirm"
	}
	return "ack"
}

// newLeaseCoalescer returns the coalescer of the acks and confirmations
// of s: those under way at once share a statement, one call per ID.
func newLeaseCoalescer(s *Store) *coalesce.Coalescer[lease] {
	return &coalesce.Coalescer[lease]{
		Take: coalesce.Distinct(maxBatch, func(l lease) string { return string(l.id) }),
		Send: func(batch []*coalesce.Call[lease]) { sendLeases(s, batch) },
	}
}

// sendLeases runs the statement of the acks and confirmations of batch: a
// call's outcome is nil if its lease was current, ErrLeaseLost if not,
// ErrPaused for a confirmation that a pause refused, or the statement's
// error.
func sendLeases(s *Store, batch []*coalesce.Call[lease]) {
	slices.SortFunc(batch, func(x, y *coalesce.Call[lease]) int { return bytes.Compare(x.Arg.id, y.Arg.id) })
	var ackIDs, confirmIDs [][]byte
	var ackTokens, confirmTokens []int64
	for _, c := range batch {
		if c.Arg.confirm {
			confirmIDs, confirmTokens = append(confirmIDs, c.Arg.id), append(confirmTokens, c.Arg.token)
		} else {
			ackIDs, ackTokens = append(ackIDs, c.Arg.id), append(ackTokens, c.Arg.token)
		}
	}
	ctx, cancel := coalesce.Context(batch)
	defer cancel()
	fail := func(err error) {
		for _, c := range batch {
			c.Err = wrap(c.Arg.op(), err)
		}
	}
	rows, err := s.pool.Query(ctx, s.sql.leases, s.queue, ackIDs, ackTokens, confirmIDs, confirmTokens)
	if err != nil {
		fail(err)
		return
	}
	outcome := make(map[string]error, len(batch)) // by ID: one call each
	for rows.Next() {
		var (
			id   []byte
			done bool
		)
		if err := rows.Scan(&id, &done); err != nil {
			rows.Close()
			fail(err)
			return
		}
		if done {
			outcome[string(id)] = nil
		} else {
			outcome[string(id)] = durable.ErrPaused
		}
	}
	if err := rows.Err(); err != nil {
		fail(err)
		return
	}
	for _, c := range batch {
		err, ok := outcome[string(c.Arg.id)]
		if !ok {
			err = durable.ErrLeaseLost
		}
		c.Err = err
	}
}
