package mysqlstore

import (
	"context"
	"database/sql"
	"strings"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// Ending and changing leases: Retry and Extend, each one statement
// naming the message by queue, ID, token and state (in flight), which
// changes nothing when the lease is not current: then the method returns
// store.ErrLeaseLost. Ack and Confirm are in batch.go.

// extendSQL moves the deadline of a lease to ? µs from now.
//
//	by (µs), queue, id, token
const extendSQL = `UPDATE {T} SET ts = {NOW} + INTERVAL ? MICROSECOND, seq = {SEQ}
WHERE queue = ? AND id = ? AND token = ? AND state = 2`

// currentSQL says whether a lease is current, and whether it was claimed
// ahead and not confirmed yet, and whether the queue is paused.
//
//	queue, queue, id, token
const currentSQL = `SELECT held, EXISTS (SELECT 1 FROM {Q} q WHERE q.queue = ? AND q.paused = 1) FROM {T}
WHERE queue = ? AND id = ? AND token = ? AND state = 2`

// retrySQL ends a lease, the message pending again ? µs from now. An
// empty error text keeps the one it had; with unhanded set, the attempt
// number goes down by one, not below zero (store.RetryParams.Unhanded);
// with expired set, only if its deadline has passed.
//
//	after (µs), error text, error text, unhanded, queue, id, token, expired
const retrySQL = `UPDATE {T} SET state = 1, ts = {NOW} + INTERVAL ? MICROSECOND, seq = {SEQ}, held = 0,
	last_error = IF(LENGTH(?) = 0, last_error, ?),
	attempt = IF(? = 0, attempt, GREATEST(attempt - 1, 0))
WHERE queue = ? AND id = ? AND token = ? AND state = 2 AND (? = 0 OR ts <= {NOW})`

// killSQL ends a lease with the message's death, as retrySQL does.
//
//	error text, error text, unhanded, queue, id, token, expired
const killSQL = `UPDATE {T} SET state = 3, ts = {NOW}, seq = {SEQ}, held = 0,
	last_error = IF(LENGTH(?) = 0, last_error, ?),
	attempt = IF(? = 0, attempt, GREATEST(attempt - 1, 0))
WHERE queue = ? AND id = ? AND token = ? AND state = 2 AND (? = 0 OR ts <= {NOW})`

// Dead letters to trim (store.Retention), within the transaction of a
// death: countDeadSQL counts them (the new one included), oldestDeadSQL
// reads the oldest ? without locking them, so that lockDeadSQL locks only
// those among them nobody holds (a transaction that holds a dead letter
// and waits for the dying message, an EnqueueTx replacing both, would
// otherwise deadlock with it; a letter skipped is trimmed by a later
// death, and no newer one is deleted in its place); oldDeadSQL locks up
// to 100 dead longer than ? µs ago, but the one dying (whose death, an
// instant of the statement before, is no older than this one's).
const (
	countDeadSQL  = `SELECT COUNT(*) FROM {T} WHERE queue = ? AND state = 3`
	oldestDeadSQL = `SELECT id FROM {T} WHERE queue = ? AND state = 3 ORDER BY ts, seq LIMIT ?`
	lockDeadSQL   = `SELECT id FROM {T} WHERE queue = ? AND state = 3 AND id IN (%s) FOR UPDATE SKIP LOCKED`
	oldDeadSQL    = `SELECT id FROM {T} WHERE queue = ? AND state = 3 AND ts < {NOW} - INTERVAL ? MICROSECOND AND id <> ?
ORDER BY ts, seq LIMIT ? FOR UPDATE SKIP LOCKED`
	deleteDeadSQL = `DELETE FROM {T} WHERE queue = ? AND state = 3 AND id IN (%s)`
)

// Extend implements store.Store: one statement (and a second to tell a
// lease extended to the same microsecond from one lost). by is rounded up
// to the microsecond.
func (s *Store) Extend(ctx context.Context, p store.ExtendParams) error {
	return s.write(ctx, "extend", func(ctx context.Context) error {
		r, err := s.db.ExecContext(ctx, expand(extendSQL), micros(p.By), s.queue, []byte(p.Lease.ID), p.Lease.Token)
		if err != nil {
			return err
		}
		if n, err := r.RowsAffected(); err != nil || n > 0 {
			return err
		}
		// The server counts the rows changed, not those found (unless the
		// DSN says clientFoundRows): a row left as it was is found again.
		_, _, err = s.current(ctx, s.db, p.Lease)
		return err
	})
}

// current returns ErrLeaseLost unless l is current, and whether it is
// held (claimed ahead, not confirmed) and the queue paused.
func (s *Store) current(ctx context.Context, q execer, l store.LeaseRef) (held, paused bool, err error) {
	err = q.QueryRowContext(ctx, expand(currentSQL), s.queue, s.queue, []byte(l.ID), l.Token).Scan(&held, &paused)
	if err == sql.ErrNoRows {
		return false, false, store.ErrLeaseLost
	}
	return held, paused, err
}

// Retry implements store.Store: one statement; a death that trims dead
// letters (p.Retention) is one transaction.
func (s *Store) Retry(ctx context.Context, p store.RetryParams) error {
	id, tok, text := []byte(p.Lease.ID), p.Lease.Token, p.Error
	if !p.Dead {
		err := s.write(ctx, "retry", func(ctx context.Context) error {
			return ended(s.db.ExecContext(ctx, expand(retrySQL), micros(max(p.After, 0)), text, text, p.Unhanded, s.queue, id, tok, p.Expired))
		})
		if err == nil {
			s.wake.local()
		}
		return err
	}
	kill := func(ctx context.Context, q execer) error {
		return ended(q.ExecContext(ctx, expand(killSQL), text, text, p.Unhanded, s.queue, id, tok, p.Expired))
	}
	if p.Retention.MaxCount <= 0 && p.Retention.MaxAge <= 0 {
		return s.write(ctx, "retry", func(ctx context.Context) error { return kill(ctx, s.db) })
	}
	return s.write(ctx, "retry", func(ctx context.Context) error {
		return s.inTx(ctx, func(tx *sql.Tx) error {
			if err := kill(ctx, tx); err != nil {
				return err
			}
			return s.trim(ctx, tx, p.Retention, id)
		})
	})
}

// ended returns ErrLeaseLost if a statement of a lease changed no row.
func ended(r sql.Result, err error) error {
	if err != nil {
		return err
	}
	n, err := r.RowsAffected()
	if err == nil && n == 0 {
		return store.ErrLeaseLost
	}
	return err
}

// trim deletes, in tx, the dead letters beyond r: up to store.MaxTrim of
// the oldest beyond r.MaxCount, and up to store.MaxTrim dead longer than
// r.MaxAge, but not dying, the message that dies.
func (s *Store) trim(ctx context.Context, tx *sql.Tx, r store.Retention, dying []byte) error {
	var gone [][]byte
	if r.MaxCount > 0 {
		var n int
		if err := tx.QueryRowContext(ctx, expand(countDeadSQL), s.queue).Scan(&n); err != nil {
			return err
		}
		if excess := min(n-r.MaxCount, store.MaxTrim); excess > 0 {
			oldest, err := s.ids(ctx, tx, expand(oldestDeadSQL), s.queue, excess)
			if err != nil {
				return err
			}
			if len(oldest) > 0 {
				args := append([]any{s.queue}, asArgs(oldest)...)
				locked, err := s.ids(ctx, tx, expand(strings.Replace(lockDeadSQL, "%s", placeholders(len(oldest)), 1)), args...)
				if err != nil {
					return err
				}
				gone = append(gone, locked...)
			}
		}
	}
	if r.MaxAge > 0 {
		old, err := s.ids(ctx, tx, expand(oldDeadSQL), s.queue, micros(r.MaxAge), dying, store.MaxTrim)
		if err != nil {
			return err
		}
		gone = append(gone, old...)
	}
	if len(gone) == 0 {
		return nil
	}
	args := append([]any{s.queue}, asArgs(gone)...)
	_, err := tx.ExecContext(ctx, expand(strings.Replace(deleteDeadSQL, "%s", placeholders(len(gone)), 1)), args...)
	return err
}

// ids runs a query of one column of IDs.
func (s *Store) ids(ctx context.Context, tx *sql.Tx, query string, args ...any) ([][]byte, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]byte
	for rows.Next() {
		var id []byte
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// placeholders is n placeholders, separated by commas.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// asArgs is ids as arguments.
func asArgs(ids [][]byte) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}
