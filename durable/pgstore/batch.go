package pgstore

import (
	"bytes"
	"slices"

	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/seed64e23a5c/timingwheel/internal/coalesce"
)

// Acks and confirmations of leases are many, small and concurrent (each
// worker of a Queue's Run acks its message, and confirms the next), and
// so are the enqueues of many producers: the acks and confirmations go
// through one coalesce.Coalescer, the enqueues through another, which
// sends the calls that arrive while one of its statements is under way
// together, in one statement, so one commit. A lone call waits for
// nothing but its own statement.

// The statement of many leases reads the table once, in l, through its
// primary key for those IDs only, and its writes find the rows l locked
// by the primary key again. For a queue that the table's statistics do
// not know yet, the planner estimates "queue = $1" at one row, and the
// statement was planned as a scan of every message of the queue (or of
// every one in flight, through the partial index of state 2) for each
// statement. So l compares the queue with a value the planner does not
// see, "(SELECT $1::text)", which it estimates as an average queue, and
// the writes name no state, which keeps the partial indexes out of their
// plans: they check the state and token that l read, of rows that l
// holds locked, so that nobody changes them in between.

// leasesSQL acks the leases of $2 ids, $3 tokens and confirms those of $4
// ids, $5 tokens (no ID twice), and returns the ID of each lease it ended
// or handed out with true, and of each confirmation it refused while the
// queue is paused with false (see store.ErrPaused): then it leaves those
// claimed ahead and not confirmed yet as they are. A confirmation whose
// $6 (µs) is positive also moves its lease's deadline to that long after
// the database's clock (clock_timestamp(), when the row is written), with
// a new seq, as extendSQL does; one of 0 keeps the deadline. A lease that
// is not current matches no row, and nothing of it changes. l locks the rows in ID order, as an Enqueue
// locks its rows, and the writes change only rows that l locked, so the
// statement waits only in l: two statements of many rows never wait for
// each other in opposite orders. A row that another transaction changed
// after the statement's snapshot is locked, and read, at its new version,
// which the writes then change.
const leasesSQL = `WITH p AS MATERIALIZED (
	SELECT EXISTS (SELECT 1 FROM {QUEUES} q WHERE q.queue = $1::text AND q.paused) AS paused
),
l AS MATERIALIZED (
	SELECT t.id, t.token, t.state, t.held FROM {T} t
	WHERE t.queue = (SELECT $1::text) AND t.id = ANY ($2::bytea[] || $4::bytea[])
	ORDER BY t.id FOR UPDATE
),
d AS (
	DELETE FROM {T} t USING l, unnest($2::bytea[], $3::bigint[]) AS a(id, token)
	WHERE t.queue = (SELECT $1::text) AND t.id = ANY ($2::bytea[]) AND t.id = l.id AND l.id = a.id AND l.token = a.token AND l.state = 2
	RETURNING t.id
),
u AS (
	UPDATE {T} t SET held = false,
		deadline = CASE WHEN a.by_us > 0 THEN clock_timestamp() + a.by_us * interval '1 microsecond' ELSE t.deadline END,
		seq = CASE WHEN a.by_us > 0 THEN nextval({SEQ}) ELSE t.seq END
	FROM l, unnest($4::bytea[], $5::bigint[], $6::bigint[]) AS a(id, token, by_us)
	WHERE t.queue = (SELECT $1::text) AND t.id = ANY ($4::bytea[]) AND t.id = l.id AND l.id = a.id AND l.token = a.token AND l.state = 2
		AND NOT (l.held AND (SELECT paused FROM p))
	RETURNING t.id
)
SELECT d.id, true FROM d
UNION ALL
SELECT u.id, true FROM u
UNION ALL
SELECT l.id, false FROM l, unnest($4::bytea[], $5::bigint[]) AS a(id, token)
WHERE (SELECT paused FROM p) AND l.id = a.id AND l.token = a.token AND l.state = 2 AND l.held`

// maxBatch bounds the calls of one statement of many leases.
const maxBatch = 500

// A lease is the argument of an ack or a confirmation.
type lease struct {
	id      []byte
	token   int64
	confirm bool  // a confirmation, not an ack
	by      int64 // of a confirmation: its new deadline from now (µs), or 0
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
	var ackTokens, confirmTokens, confirmBys []int64
	for _, c := range batch {
		if c.Arg.confirm {
			confirmIDs, confirmTokens = append(confirmIDs, c.Arg.id), append(confirmTokens, c.Arg.token)
			confirmBys = append(confirmBys, c.Arg.by)
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
	rows, err := s.pool.Query(ctx, s.sql.leases, s.queue, ackIDs, ackTokens, confirmIDs, confirmTokens, confirmBys)
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
			outcome[string(id)] = store.ErrPaused
		}
	}
	if err := rows.Err(); err != nil {
		fail(err)
		return
	}
	for _, c := range batch {
		err, ok := outcome[string(c.Arg.id)]
		if !ok {
			err = store.ErrLeaseLost
		}
		c.Err = err
	}
}
