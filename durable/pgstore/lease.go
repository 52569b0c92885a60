package pgstore

import (
	"context"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// Ending and changing leases: Confirm, Ack, Retry and Extend,
// each one statement naming the message by queue, ID, token and state (in
// flight), which changes nothing when the lease is not current: then the
// method returns store.ErrLeaseLost.
//
// They name the state as "state + 0 = 2", which no partial index's
// predicate matches, so that the planner finds the message through the
// primary key. Given "state = 2", it may take the partial index of the
// messages in flight when the table's statistics hold few of them (a
// queue that they do not know yet, or one analyzed while its messages
// waited), and read every message of the queue in flight, and every
// dead entry of that index, for each call. requeueSQL does the same.

// extendSQL moves the deadline of a lease to $4 µs from now.
//
//	$1 queue, $2 id, $3 token, $4 by (µs)
const extendSQL = `UPDATE {T} SET deadline = clock_timestamp() + $4::bigint * interval '1 microsecond', seq = nextval({SEQ})
WHERE queue = $1::text AND id = $2::bytea AND token = $3::bigint AND state + 0 = 2`

// retrySQL ends a lease, the message pending again $4 µs from now (Retry
// and a lease given back), and notifies as enqueueSQL does. An empty $5 keeps the
// error text.
//
//	$1 queue, $2 id, $3 token, $4 after (µs), $5 error text, $6 only if
//	expired, $7 the channel, $8 unhanded: the attempt number goes down by
//	one (not below zero)
//	returns 1 if it ended the lease, and whether it notified
const retrySQL = `WITH n AS MATERIALIZED (SELECT clock_timestamp() AS now),
` + headSQL + `,
u AS (
	UPDATE {T} t SET state = 1, due = n.now + greatest($4::bigint, 0) * interval '1 microsecond',
		seq = nextval({SEQ}), deadline = NULL, held = false,
		last_error = CASE WHEN coalesce(octet_length($5::bytea), 0) = 0 THEN t.last_error ELSE $5::bytea END,
		attempt = CASE WHEN $8::boolean THEN greatest(t.attempt - 1, 0) ELSE t.attempt END
	FROM n
	WHERE t.queue = $1::text AND t.id = $2::bytea AND t.token = $3::bigint AND t.state + 0 = 2
		AND (NOT $6::boolean OR t.deadline <= n.now)
	RETURNING t.due
),
nt AS MATERIALIZED (
	SELECT pg_notify($7::text, '') FROM u WHERE NOT EXISTS (SELECT 1 FROM head WHERE head.due <= u.due)
)
SELECT (SELECT count(*) FROM u), (SELECT count(*) FROM nt)`

// killSQL ends a lease with the message's death, and trims the dead
// letters (to RetryParams.Retention): up to store.MaxTrim of the oldest
// beyond $6 (0: no limit; counting them reads the dead index of the
// queue) and up to store.MaxTrim dead longer than $7 µs ago (0: no
// limit), both the oldest first (the letters dead longer than $7 are a
// prefix of that order), so that together they are store.MaxTrim at
// most. The message that
// dies is not among them: the statement does not see it dead.
//
// The trim takes only the letters nobody holds (SKIP LOCKED), so that the
// statement, which holds the dying message's row, never waits for another
// row: a transaction that holds a dead letter and waits for the dying
// message (an EnqueueTx replacing both) would otherwise deadlock with it.
// A letter skipped is trimmed by a later death; oldest picks the letters
// beyond the count before it skips any, so that it never deletes a newer
// one in place of one skipped; nothing is counted or locked when no
// message died: EXISTS (SELECT 1 FROM u) refers to no row of the scan, so
// PostgreSQL checks it once, before the scan and the subqueries of its
// limit run, wherever it stands in the condition. gone names the letters
// by their IDs, and the queue as a value the planner does not see (see
// leasesSQL), so that it finds them by the primary key, not by a scan of
// the queue.
//
//	$1 queue, $2 id, $3 token, $4 error text, $5 only if expired, $6 max
//	count, $7 max age (µs)
//	returns 1 if it ended the lease, and how many dead letters it deleted
const killSQL = `WITH n AS MATERIALIZED (SELECT clock_timestamp() AS now),
u AS (
	UPDATE {T} t SET state = 3, died_at = n.now, seq = nextval({SEQ}), deadline = NULL, held = false,
		last_error = CASE WHEN coalesce(octet_length($4::bytea), 0) = 0 THEN t.last_error ELSE $4::bytea END
	FROM n
	WHERE t.queue = $1::text AND t.id = $2::bytea AND t.token = $3::bigint AND t.state + 0 = 2
		AND (NOT $5::boolean OR t.deadline <= n.now)
	RETURNING 1
),
oldest AS MATERIALIZED (
	SELECT d.id FROM {T} d
	WHERE EXISTS (SELECT 1 FROM u) AND d.queue = (SELECT $1::text) AND d.state + 0 = 3 AND d.id = ANY (ARRAY(
		SELECT o.id FROM {T} o WHERE o.queue = $1::text AND o.state = 3
		ORDER BY o.died_at, o.seq
		LIMIT CASE WHEN $6::bigint > 0 THEN greatest(0, least({MAXTRIM},
			(SELECT count(*) FROM {T} c WHERE c.queue = $1::text AND c.state = 3) + 1 - $6::bigint)) ELSE 0 END))
	FOR UPDATE SKIP LOCKED
),
old AS MATERIALIZED (
	SELECT o.id FROM {T} o WHERE o.queue = $1::text AND o.state = 3 AND $7::bigint > 0 AND EXISTS (SELECT 1 FROM u)
		AND o.died_at < (SELECT now FROM n) - $7::bigint * interval '1 microsecond'
	ORDER BY o.died_at, o.seq LIMIT {MAXTRIM}
	FOR UPDATE SKIP LOCKED
),
gone AS (
	DELETE FROM {T} d
	WHERE d.queue = (SELECT $1::text) AND d.state + 0 = 3
		AND d.id = ANY (ARRAY(SELECT id FROM oldest UNION SELECT id FROM old))
	RETURNING 1
)
SELECT (SELECT count(*) FROM u), (SELECT count(*) FROM gone)`

// Confirm implements store.Store: one statement, shared with the acks
// and confirmations of other goroutines under way at the same time (see
// coalesce.Coalescer). A positive p.By, rounded up to the microsecond,
// moves the lease's deadline in that statement, from the database's
// clock, each confirmation of the statement with its own.
func (s *Store) Confirm(ctx context.Context, p store.ConfirmParams) error {
	return s.coalesced(ctx, p.Lease, true, micros(max(p.By, 0)))
}

// Ack implements store.Store: one statement, which deletes the row,
// shared with the acks and confirmations of other goroutines under way at
// the same time (see coalesce.Coalescer).
func (s *Store) Ack(ctx context.Context, l store.LeaseRef) error {
	return s.coalesced(ctx, l, false, 0)
}

// coalesced runs the ack or confirmation of lease l through the store's
// coalescer of leases; by is a confirmation's new deadline from now (µs),
// or 0.
func (s *Store) coalesced(ctx context.Context, l store.LeaseRef, confirm bool, by int64) error {
	if err := s.check(); err != nil {
		return err
	}
	tok, ok := tokenArg(l.Token)
	if !ok {
		return store.ErrLeaseLost
	}
	return s.leases.Do(ctx, lease{id: []byte(l.ID), token: tok, confirm: confirm, by: by})
}

// Extend implements store.Store: one statement. by is rounded up to the
// microsecond.
func (s *Store) Extend(ctx context.Context, p store.ExtendParams) error {
	return s.exec(ctx, "extend", s.sql.extend, p.Lease, micros(p.By))
}

// exec runs one of the statements of a lease, whose arguments are the
// queue, the lease's ID and token, and args, and returns ErrLeaseLost if
// it changed no row.
func (s *Store) exec(ctx context.Context, op, sql string, l store.LeaseRef, args ...any) error {
	if err := s.check(); err != nil {
		return err
	}
	tok, ok := tokenArg(l.Token)
	if !ok {
		return store.ErrLeaseLost
	}
	tag, err := s.pool.Exec(ctx, sql, append([]any{s.queue, []byte(l.ID), tok}, args...)...)
	if err != nil {
		return wrap(op, err)
	}
	if tag.RowsAffected() == 0 {
		return store.ErrLeaseLost
	}
	return nil
}

// Retry implements store.Store: one statement. A message that dies
// trims the dead letters to p.Retention in the same statement.
func (s *Store) Retry(ctx context.Context, p store.RetryParams) error {
	if p.Dead {
		return s.end(ctx, s.sql.kill, p.Lease, errorText(p.Error), p.Expired,
			int64(p.Retention.MaxCount), micros(p.Retention.MaxAge))
	}
	return s.end(ctx, s.sql.retry, p.Lease, micros(max(p.After, 0)), errorText(p.Error), p.Expired, s.channel, p.Unhanded)
}

// end runs retrySQL or killSQL on lease l, and returns ErrLeaseLost if it
// ended no lease.
func (s *Store) end(ctx context.Context, sql string, l store.LeaseRef, args ...any) error {
	const op = "retry"
	if err := s.check(); err != nil {
		return err
	}
	tok, ok := tokenArg(l.Token)
	if !ok {
		return store.ErrLeaseLost
	}
	var ended, other int64
	err := s.pool.QueryRow(ctx, sql, append([]any{s.queue, []byte(l.ID), tok}, args...)...).Scan(&ended, &other)
	if err != nil {
		return wrap(op, err)
	}
	if ended == 0 {
		return store.ErrLeaseLost
	}
	return nil
}

// errorText is the argument of an error text: never nil, which would be
// NULL.
func errorText(text string) []byte {
	if text == "" {
		return []byte{}
	}
	return []byte(text)
}
