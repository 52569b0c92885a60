package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/seed64e23a5c/timingwheel/internal/dedup"
)

// Writing messages: Enqueue and EnqueueTx, Cancel and Requeue.

// enqueueRowSQL is the row of one message in enqueueSQL: its due time, or
// the database's now for NULL; its seq, and first token, the statement's
// seq (or the seq given, for a call of several statements) plus its place
// in the call. A message replaced keeps its enqueued_at and its token (the
// next claim takes a greater one); a lease on it is lost, since it is no
// longer in flight.
//
//	queue, id, kind, payload, max attempts, timeout (ns), due,
//	seq base or NULL, place, seq base or NULL, place
const enqueueRowSQL = `(?, ?, ?, ?, ?, ?, 1, COALESCE(?, {NOW}), IFNULL(?, {SEQ}) + ?, 0, IFNULL(?, {SEQ}) + ?, 0, '', {NOW})`

// enqueueSQL upserts the rows of enqueueRowSQL that follow it. VALUES()
// in ON DUPLICATE KEY UPDATE is deprecated in MySQL 8.0.20+ (for a row
// alias, which MariaDB lacks), and works in both.
const enqueueSQL = `INSERT INTO {T} (queue, id, kind, payload, max_attempts, timeout_ns, state, ts, seq, attempt, token,
	held, last_error, enqueued_at) VALUES `

// enqueueUpdateSQL replaces a message of the same ID: its fields all (a
// zero Kind, MaxAttempts or Timeout too), and its state.
const enqueueUpdateSQL = ` ON DUPLICATE KEY UPDATE kind = VALUES(kind), payload = VALUES(payload),
	max_attempts = VALUES(max_attempts), timeout_ns = VALUES(timeout_ns), state = 1, ts = VALUES(ts),
	seq = VALUES(seq), attempt = 0, held = 0, last_error = ''`

// seqBaseSQL reads the seq of the statement, for a call of several.
const seqBaseSQL = `SELECT {SEQ}`

// cancelSQL deletes the message unless it is in flight and handed out.
const cancelSQL = `DELETE FROM {T} WHERE queue = ? AND id = ? AND (state <> 2 OR held = 1)`

// existsSQL says whether the message exists.
const existsSQL = `SELECT COUNT(*) FROM {T} WHERE queue = ? AND id = ?`

// requeueSQL makes a dead message pending again, attempts from zero and
// no error text, due at ? (the database's now for NULL).
const requeueSQL = `UPDATE {T} SET state = 1, ts = COALESCE(?, {NOW}), seq = {SEQ}, attempt = 0, last_error = ''
WHERE queue = ? AND id = ? AND state = 3`

// An execer runs statements: the *sql.DB, or a transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Enqueue implements store.Store: one statement for up to 1000 messages
// and 4 MiB of payloads, or else one transaction of several. Of messages
// of the same ID in msgs the last is written, as two calls would.
func (s *Store) Enqueue(ctx context.Context, msgs []store.Message) error {
	for i := range msgs {
		if err := msgs[i].Validate(); err != nil {
			return err
		}
	}
	msgs = dedup.LastOfEachID(msgs)
	if len(msgs) == 0 {
		return s.check(ctx, "enqueue")
	}
	err := s.write(ctx, "enqueue", func(ctx context.Context) error {
		if oneStatement(msgs) {
			return s.enqueue(ctx, s.db, msgs, nil)
		}
		return s.inTx(ctx, func(tx *sql.Tx) error { return s.enqueue(ctx, tx, msgs, nil) })
	})
	if err == nil {
		s.wake.local()
	}
	return err
}

// EnqueueTx writes msgs as Enqueue does, inside the caller's transaction
// tx, on the store's database: they exist, and are delivered, if and only
// if tx commits. The batch is validated as the queue's Enqueue does
// (store.ValidateBatch: a batch holding an ID twice is refused). Their
// EnqueuedAt, and the due time of a zero Due, is the database's clock at
// the EnqueueTx, not at the commit; a message is claimed at its due time
// after the commit, never before the commit. Receivers in other
// processes, and in this one, learn of them by the poll of their stores
// (see the package doc's Wake-ups).
//
// Until tx ends, the rows it wrote are locked: another Enqueue or a
// Cancel of the same IDs waits for it, and a claim skips them. Keep such
// transactions short. A tx that was committed or rolled back gives an
// error wrapping ErrTxDone; a deadlock or a lock wait timeout is
// returned as it is (the server rolled back the transaction, or the
// statement): retry the whole transaction.
func (s *Store) EnqueueTx(ctx context.Context, tx *sql.Tx, msgs ...store.Message) error {
	if err := s.check(ctx, "EnqueueTx"); err != nil {
		return err
	}
	if tx == nil {
		return errors.New("mysqlstore: EnqueueTx: nil transaction")
	}
	if err := store.ValidateBatch(msgs); err != nil {
		return err // the queue's rule, duplicate IDs included
	}
	if len(msgs) == 0 {
		return nil
	}
	return wrapTx(s.enqueue(ctx, tx, msgs, nil))
}

// oneStatement reports whether msgs fit one statement.
func oneStatement(msgs []store.Message) bool {
	if len(msgs) > maxEnqueueRows {
		return false
	}
	size := 0
	for i := range msgs {
		size += len(msgs[i].Payload)
	}
	return len(msgs) <= 1 || size <= maxEnqueueBytes
}

// enqueue writes msgs (valid, no ID twice) on q: one statement if they
// fit one, or else, on q a transaction, statements of up to
// maxEnqueueRows rows and maxEnqueueBytes each, with seqs from one base
// read first. Each statement takes its rows in ID order, and the
// statements follow the IDs' order, so that two calls lock their rows in
// one order and never wait for each other in a cycle; each row's seq is
// its place in msgs, so that equal due times keep msgs' order.
func (s *Store) enqueue(ctx context.Context, q execer, msgs []store.Message, base any) error {
	order := make([]int, len(msgs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int { return strings.Compare(msgs[x].ID, msgs[y].ID) })
	if !oneStatement(msgs) && base == nil {
		var b int64
		if err := q.QueryRowContext(ctx, expand(seqBaseSQL)).Scan(&b); err != nil {
			return err
		}
		base = b
	}
	for len(order) > 0 {
		n, size := 0, 0
		for n < len(order) && n < maxEnqueueRows && (n == 0 || size+len(msgs[order[n]].Payload) <= maxEnqueueBytes) {
			size += len(msgs[order[n]].Payload)
			n++
		}
		if err := s.enqueueRows(ctx, q, msgs, order[:n], base); err != nil {
			return err
		}
		order = order[n:]
	}
	return nil
}

// enqueueRows runs one enqueueSQL of the messages msgs[i] for i in rows.
func (s *Store) enqueueRows(ctx context.Context, q execer, msgs []store.Message, rows []int, base any) error {
	var b strings.Builder
	b.WriteString(enqueueSQL)
	args := make([]any, 0, 11*len(rows))
	for k, i := range rows {
		if k > 0 {
			b.WriteString(", ")
		}
		b.WriteString(enqueueRowSQL)
		m := &msgs[i]
		payload := m.Payload
		if payload == nil {
			payload = []byte{}
		}
		args = append(args, s.queue, []byte(m.ID), []byte(m.Kind), payload, m.MaxAttempts, int64(m.Timeout),
			dueArg(m.Due), base, i, base, i)
	}
	b.WriteString(enqueueUpdateSQL)
	_, err := q.ExecContext(ctx, expand(b.String()), args...)
	return err
}

// Cancel implements store.Store: one statement, and a second to tell a
// message in flight from none when it deleted nothing.
func (s *Store) Cancel(ctx context.Context, id string) (bool, error) {
	var deleted, exists bool
	err := s.write(ctx, "cancel", func(ctx context.Context) error {
		var err error
		deleted, exists, err = s.cancel(ctx, s.db, id)
		return err
	})
	switch {
	case err != nil:
		return false, err
	case !deleted && exists:
		return false, store.ErrInFlight
	}
	return deleted, nil
}

// cancel deletes the message id on q unless it is in flight and handed
// out, and reports whether it did, and whether it exists (then in flight).
func (s *Store) cancel(ctx context.Context, q execer, id string) (deleted, exists bool, err error) {
	r, err := q.ExecContext(ctx, expand(cancelSQL), s.queue, []byte(id))
	if err != nil {
		return false, false, err
	}
	if n, err := r.RowsAffected(); err != nil || n > 0 {
		return n > 0, false, err
	}
	var count int
	if err := q.QueryRowContext(ctx, expand(existsSQL), s.queue, []byte(id)).Scan(&count); err != nil {
		return false, false, err
	}
	return false, count > 0, nil
}

// Requeue implements store.Store: one statement. A zero due is the
// database's now.
func (s *Store) Requeue(ctx context.Context, p store.RequeueParams) error {
	var n int64
	err := s.write(ctx, "requeue", func(ctx context.Context) error {
		r, err := s.db.ExecContext(ctx, expand(requeueSQL), dueArg(p.Due), s.queue, []byte(p.ID))
		if err != nil {
			return err
		}
		n, err = r.RowsAffected()
		return err
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%w: no dead message %q", store.ErrNotFound, p.ID)
	}
	s.wake.local()
	return nil
}
