package pgstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/seed64e23a5c/timingwheel/internal/coalesce"
	"github.com/seed64e23a5c/timingwheel/internal/dedup"

	"github.com/jackc/pgx/v5"
)

// Writing messages: Enqueue and EnqueueTx, Cancel and Requeue.

// headSQL is a CTE that reads the due time of the earliest pending message
// of the queue $1 the statement can see (before its own writes): the
// statements that make a message pending notify when theirs is earlier,
// or when there is none. One index lookup.
const headSQL = `head AS MATERIALIZED (
	SELECT p.due FROM {T} p WHERE p.queue = $1::text AND p.state = 1 ORDER BY p.due, p.seq LIMIT 1
)`

// enqueueSQL upserts messages as pending, in the order of the arrays,
// each taking a seq in that order, and notifies if the earliest of them
// is earlier than every pending message the statement can see, or if the
// statement runs in a transaction of a snapshot older than the statement
// (REPEATABLE READ or SERIALIZABLE, for EnqueueTx), where what it sees
// may be long gone. A message
// replaced keeps its enqueued_at and its token (the next claim takes a
// greater one), and takes the new message's kind, max attempts and
// timeout, zero values included; a lease on it is lost, since it is no
// longer in flight.
//
//	$1 queue, $2 ids, $3 payloads, $4 due times, $5 whether each is due
//	now (a zero Due), $6 the channel, $7 the seq of each, or NULL to draw
//	them in the order of the arrays, $8 kinds, $9 max attempts, $10
//	timeouts (ns)
//	returns the messages written, and whether it notified
const enqueueSQL = `WITH n AS MATERIALIZED (SELECT clock_timestamp() AS now),
m AS MATERIALIZED (
	SELECT i.id, i.payload, CASE WHEN i.isnow THEN n.now ELSE i.due END AS due, n.now AS now,
		coalesce(i.seq, nextval({SEQ})) AS seq, i.kind, i.max_attempts, i.timeout_ns
	FROM unnest($2::bytea[], $3::bytea[], $4::timestamptz[], $5::boolean[], $7::bigint[],
		$8::bytea[], $9::integer[], $10::bigint[])
		WITH ORDINALITY AS i(id, payload, due, isnow, seq, kind, max_attempts, timeout_ns, ord)
	CROSS JOIN n
	ORDER BY i.ord
),
` + headSQL + `,
w AS (
	INSERT INTO {T} AS t (queue, id, payload, state, due, seq, enqueued_at, kind, max_attempts, timeout_ns)
	SELECT $1::text, m.id, m.payload, 1, m.due, m.seq, m.now, m.kind, m.max_attempts, m.timeout_ns FROM m ORDER BY m.id
	ON CONFLICT (queue, id) DO UPDATE SET payload = excluded.payload, state = 1, due = excluded.due,
		seq = excluded.seq, deadline = NULL, died_at = NULL, attempt = 0, held = false, last_error = ''::bytea,
		kind = excluded.kind, max_attempts = excluded.max_attempts, timeout_ns = excluded.timeout_ns
	RETURNING 1
),
nt AS MATERIALIZED (
	SELECT pg_notify($6::text, '') FROM (SELECT min(m.due) AS due FROM m) x
	WHERE NOT EXISTS (SELECT 1 FROM head WHERE head.due <= x.due)
		OR (current_setting('transaction_isolation') <> 'read committed'
			AND transaction_timestamp() < statement_timestamp())
)
SELECT (SELECT count(*) FROM w), (SELECT count(*) FROM nt)`

// seqsSQL draws $1 values of the seq sequence, in order.
const seqsSQL = `SELECT ARRAY(SELECT nextval({SEQ}) FROM generate_series(1, $1::int))`

// cancelSQL deletes the message unless it is in flight and handed out,
// and says whether it did, and whether the message exists (then in flight).
//
//	$1 queue, $2 id
const cancelSQL = `WITH d AS (
	DELETE FROM {T} WHERE queue = $1::text AND id = $2::bytea AND (state <> 2 OR held) RETURNING 1
)
SELECT (SELECT count(*) FROM d) > 0, EXISTS (SELECT 1 FROM {T} WHERE queue = $1::text AND id = $2::bytea)`

// requeueSQL makes a dead message pending again, attempts from zero and
// no error text, and notifies as enqueueSQL does. It names the state as
// "state + 0 = 3" to find the message through the primary key, not the
// partial index of the dead (see lease.go).
//
//	$1 queue, $2 id, $3 due time, $4 whether it is due now, $5 the channel
const requeueSQL = `WITH n AS MATERIALIZED (SELECT clock_timestamp() AS now),
` + headSQL + `,
u AS (
	UPDATE {T} t SET state = 1, due = CASE WHEN $4::boolean THEN n.now ELSE $3::timestamptz END,
		seq = nextval({SEQ}), died_at = NULL, attempt = 0, last_error = ''::bytea
	FROM n
	WHERE t.queue = $1::text AND t.id = $2::bytea AND t.state + 0 = 3
	RETURNING t.due
),
nt AS MATERIALIZED (
	SELECT pg_notify($5::text, '') FROM u WHERE NOT EXISTS (SELECT 1 FROM head WHERE head.due <= u.due)
)
SELECT (SELECT count(*) FROM u), (SELECT count(*) FROM nt)`

// aloneEnqueue is the size from which an Enqueue call runs its own
// statement at once rather than waiting to share one: such a call gains
// little by sharing, and several of them run side by side on the server's
// cores, where shared statements run one at a time.
const aloneEnqueue = 64

// A querier runs statements: the pool, or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Enqueue implements store.Store. It validates every message before
// writing any, and writes them with one statement, or, for a batch of
// more than 1000 messages or 16 MiB, with several in one transaction,
// which take the messages in ID order (see enqueueInIDOrder). Of
// messages of the same ID in msgs the last is written, as two calls would.
// Calls of fewer than 64 messages made at the same time share a statement
// (see coalesce.Coalescer): each is still written whole or not at all.
func (s *Store) Enqueue(ctx context.Context, msgs []store.Message) error {
	if err := s.check(); err != nil {
		return err
	}
	b, err := newEnqueueBatch(msgs)
	if err != nil || len(b.ids) == 0 {
		return err
	}
	if b.oneStatement() {
		return s.enqueues.Do(ctx, b)
	}
	return wrap("enqueue", pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		return s.enqueueInIDOrder(ctx, tx, b)
	}))
}

// EnqueueTx writes msgs as Enqueue does, inside the caller's transaction
// tx, on the store's database: they exist, and are delivered, if and only
// if tx commits; receivers in every process learn of them at the commit
// (the notification, if any, is sent by the commit, and not at all on a
// rollback). Their EnqueuedAt, and the due time of a zero Due, is the
// database's clock at the EnqueueTx, not at the commit. A message is
// claimed at its due time after the commit, never before the commit.
//
// Until tx ends, the rows it wrote are locked: another Enqueue or a Cancel
// of the same IDs waits for it, and a claim skips them. Keep such
// transactions short. In a transaction of isolation REPEATABLE READ or
// SERIALIZABLE, whose snapshot may be older than the EnqueueTx, it
// notifies whatever the due times; at READ COMMITTED, the default, only
// for a new earliest message (see the package documentation). A tx that
// was committed, rolled back or aborted by an earlier error gives an
// error wrapping ErrTxDone.
//
// Errors: the caller's transaction decides what was written, not
// EnqueueTx. An error from EnqueueTx means its statement did not take
// effect in tx, and a statement that failed aborts tx in PostgreSQL: roll
// it back, and retry the whole transaction (the messages, upserted by ID,
// may be written again safely). What counts is tx.Commit's result: nil,
// and the messages are written; an error other than a connection lost
// during the commit, and nothing is; a connection lost during the commit
// (io.ErrUnexpectedEOF, a reset) leaves it unknown whether the commit
// happened, as for any transaction: the messages may have been written,
// and retrying the transaction is safe as far as the messages go (an
// Enqueue of the same ID replaces, it never duplicates), but not for the
// caller's other writes unless they are idempotent too.
func (s *Store) EnqueueTx(ctx context.Context, tx pgx.Tx, msgs ...store.Message) error {
	if err := s.check(); err != nil {
		return err
	}
	if tx == nil {
		return errors.New("pgstore: EnqueueTx: nil transaction")
	}
	if err := store.ValidateBatch(msgs); err != nil {
		return err // the queue's rule, duplicate IDs included
	}
	b, err := newEnqueueBatch(msgs)
	switch {
	case err != nil || len(b.ids) == 0:
		return err
	case b.oneStatement():
		return wrapTx(s.enqueue(ctx, tx, b))
	}
	return wrapTx(s.enqueueInIDOrder(ctx, tx, b))
}

// An enqueueBatch is the arguments of one enqueueSQL.
type enqueueBatch struct {
	ids, payloads [][]byte
	dues          []time.Time
	now           []bool
	seqs          []int64 // nil: the statement draws them
	// kinds, maxAttempts and timeouts (ns) are the messages'.
	kinds       [][]byte
	maxAttempts []int32
	timeouts    []int64
	bytes       int
}

// enqueueInIDOrder writes all, the messages of one call too many for one
// statement, in the call's order, on q, a transaction: in statements that
// take the messages in ID order, each with the seq it has in the call's order
// (drawn first, in one statement). So two calls that each take several
// statements lock their rows in one order, as the statement of a single
// call does, and never wait for each other in a cycle (PostgreSQL would
// fail one with "deadlock detected"); and messages of equal due times
// keep the order of the call.
func (s *Store) enqueueInIDOrder(ctx context.Context, q querier, all *enqueueBatch) error {
	if err := q.QueryRow(ctx, s.sql.seqs, len(all.ids)).Scan(&all.seqs); err != nil {
		return err
	}
	if len(all.seqs) != len(all.ids) {
		return fmt.Errorf("drew %d seqs of %d", len(all.seqs), len(all.ids))
	}
	byID := make([]int, len(all.ids))
	for i := range byID {
		byID[i] = i
	}
	slices.SortFunc(byID, func(x, y int) int { return bytes.Compare(all.ids[x], all.ids[y]) })
	stmt := &enqueueBatch{}
	for _, i := range byID {
		if !stmt.fits(len(all.payloads[i])) {
			if err := s.enqueue(ctx, q, stmt); err != nil {
				return err
			}
			stmt = &enqueueBatch{}
		}
		stmt.take(all, i)
	}
	return s.enqueue(ctx, q, stmt)
}

// newEnqueueBatch validates msgs and returns the last message of each ID,
// in their order, as one batch.
func newEnqueueBatch(msgs []store.Message) (*enqueueBatch, error) {
	for i := range msgs {
		if err := msgs[i].Validate(); err != nil {
			return nil, err
		}
	}
	msgs = dedup.LastOfEachID(msgs)
	b := &enqueueBatch{}
	for i := range msgs {
		b.add(&msgs[i])
	}
	return b, nil
}

// oneStatement reports whether b fits one statement: at most
// maxEnqueueRows messages and maxEnqueueBytes of payloads, or one message.
func (b *enqueueBatch) oneStatement() bool {
	return len(b.ids) <= maxEnqueueRows && (len(b.ids) <= 1 || b.bytes <= maxEnqueueBytes)
}

// fits reports whether a message of size bytes of payload may join b.
func (b *enqueueBatch) fits(size int) bool {
	return len(b.ids) < maxEnqueueRows && (len(b.ids) == 0 || b.bytes+size <= maxEnqueueBytes)
}

// append adds the messages of o to b, in their order.
func (b *enqueueBatch) append(o *enqueueBatch) {
	b.ids = append(b.ids, o.ids...)
	b.payloads = append(b.payloads, o.payloads...)
	b.dues = append(b.dues, o.dues...)
	b.now = append(b.now, o.now...)
	b.seqs = append(b.seqs, o.seqs...)
	b.kinds = append(b.kinds, o.kinds...)
	b.maxAttempts = append(b.maxAttempts, o.maxAttempts...)
	b.timeouts = append(b.timeouts, o.timeouts...)
	b.bytes += o.bytes
}

// take adds the message at index i of o, with its seq, to b.
func (b *enqueueBatch) take(o *enqueueBatch, i int) {
	b.ids = append(b.ids, o.ids[i])
	b.payloads = append(b.payloads, o.payloads[i])
	b.dues = append(b.dues, o.dues[i])
	b.now = append(b.now, o.now[i])
	b.seqs = append(b.seqs, o.seqs[i])
	b.kinds = append(b.kinds, o.kinds[i])
	b.maxAttempts = append(b.maxAttempts, o.maxAttempts[i])
	b.timeouts = append(b.timeouts, o.timeouts[i])
	b.bytes += len(o.payloads[i])
}

// add adds m, a valid message, to b.
func (b *enqueueBatch) add(m *store.Message) {
	payload := m.Payload
	if payload == nil {
		payload = []byte{} // NULL otherwise
	}
	b.ids = append(b.ids, []byte(m.ID))
	b.payloads = append(b.payloads, payload)
	b.dues = append(b.dues, dueArg(m.Due))
	b.now = append(b.now, m.Due.IsZero())
	b.kinds = append(b.kinds, append([]byte{}, m.Kind...)) // never nil, which would be NULL
	b.maxAttempts = append(b.maxAttempts, int32(m.MaxAttempts))
	b.timeouts = append(b.timeouts, int64(m.Timeout))
	b.bytes += len(payload)
}

// enqueue runs one enqueueSQL on q.
func (s *Store) enqueue(ctx context.Context, q querier, b *enqueueBatch) error {
	var written, notified int64
	err := q.QueryRow(ctx, s.sql.enqueue, s.queue, b.ids, b.payloads, b.dues, b.now, s.channel, b.seqs,
		b.kinds, b.maxAttempts, b.timeouts).Scan(&written, &notified)
	if err != nil {
		return err
	}
	if written != int64(len(b.ids)) {
		return fmt.Errorf("wrote %d messages of %d", written, len(b.ids))
	}
	return nil
}

// Cancel implements store.Store: one statement.
func (s *Store) Cancel(ctx context.Context, id string) (bool, error) {
	if err := s.check(); err != nil {
		return false, err
	}
	var deleted, exists bool
	if err := s.pool.QueryRow(ctx, s.sql.cancel, s.queue, []byte(id)).Scan(&deleted, &exists); err != nil {
		return false, wrap("cancel", err)
	}
	if !deleted && exists {
		return false, store.ErrInFlight
	}
	return deleted, nil
}

// Requeue implements store.Store: one statement. A zero due is the
// database's now.
func (s *Store) Requeue(ctx context.Context, p store.RequeueParams) error {
	id, due := p.ID, p.Due
	if err := s.check(); err != nil {
		return err
	}
	var n, notified int64
	err := s.pool.QueryRow(ctx, s.sql.requeue, s.queue, []byte(id), dueArg(due), due.IsZero(), s.channel).Scan(&n, &notified)
	if err != nil {
		return wrap("requeue", err)
	}
	if n == 0 {
		return fmt.Errorf("%w: no dead message %q", store.ErrNotFound, id)
	}
	return nil
}

// newEnqueueCoalescer returns the coalescer of the Enqueue calls of s
// that fit one statement.
func newEnqueueCoalescer(s *Store) *coalesce.Coalescer[*enqueueBatch] {
	return &coalesce.Coalescer[*enqueueBatch]{
		Yield: true,
		Alone: func(b *enqueueBatch) bool { return len(b.ids) >= aloneEnqueue },
		Take:  takeEnqueues,
		Send:  func(batch []*coalesce.Call[*enqueueBatch]) { sendEnqueues(s, batch) },
	}
}

// takeEnqueues picks the calls of a statement: their messages fit one
// statement and hold no ID twice (ON CONFLICT cannot write a row twice in
// a statement).
var takeEnqueues = coalesce.Fitting(maxEnqueueRows, maxEnqueueBytes,
	func(b *enqueueBatch) (rows, bytes int) { return len(b.ids), b.bytes },
	func(b *enqueueBatch) iter.Seq[string] {
		return func(yield func(string) bool) {
			for _, id := range b.ids {
				if !yield(string(id)) {
					return
				}
			}
		}
	})

// sendEnqueues writes the messages of the calls of batch with one
// statement, all or none. If it fails, and there was more than one call,
// each call is written on its own, so that each has its own outcome.
func sendEnqueues(s *Store, batch []*coalesce.Call[*enqueueBatch]) {
	all := batch[0].Arg
	if len(batch) > 1 {
		all = &enqueueBatch{}
		for _, c := range batch {
			all.append(c.Arg)
		}
	}
	ctx, cancel := coalesce.Context(batch)
	err := s.enqueue(ctx, s.pool, all)
	cancel()
	if err == nil || len(batch) == 1 {
		for _, c := range batch {
			c.Err = wrap("enqueue", err)
		}
		return
	}
	for _, c := range batch {
		c.Err = wrap("enqueue", s.enqueue(c.Ctx, s.pool, c.Arg))
	}
}
