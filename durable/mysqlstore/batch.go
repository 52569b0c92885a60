package mysqlstore

import (
	"context"
	"database/sql"
	"slices"
	"strings"

	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/seed64e23a5c/timingwheel/internal/coalesce"
)

// Acks and confirmations of leases are many, small and concurrent (each
// worker of a Queue's Run acks its message, and confirms the next): they
// go through one coalesce.Coalescer, which sends the calls that arrive
// while one of its writes is under way together, in the next, one commit
// for all, as a group commit does. A lone call is one statement; a batch
// is one transaction that locks its rows in ID order (so that two batches
// never wait for each other in a cycle), reads their tokens, and deletes
// the acked and confirms the others, whatever their number, in two
// statements more. A confirmation's By (store.ConfirmParams) moves its
// lease's deadline in the statement that confirms it, a value of its row
// in a batch.

// ackSQL deletes the message of a current lease.
//
//	queue, id, token
const ackSQL = `DELETE FROM {T} WHERE queue = ? AND id = ? AND token = ? AND state = 2`

// confirmSQL hands out a current lease, unless it is held (claimed ahead,
// not confirmed yet) and the queue paused; with by (µs) above 0 it moves
// the deadline to by from now, as extendSQL does, and otherwise it
// changes only a held lease.
//
//	by, by, by, queue, id, token, by, queue
const confirmSQL = `UPDATE {T} SET held = 0,
	ts = IF(? > 0, {NOW} + INTERVAL ? MICROSECOND, ts), seq = IF(? > 0, {SEQ}, seq)
WHERE queue = ? AND id = ? AND token = ? AND state = 2 AND (held = 1 OR ? > 0)
	AND (held = 0 OR NOT EXISTS (SELECT 1 FROM {Q} q WHERE q.queue = ? AND q.paused = 1))`

// lockLeasesSQL locks the rows of the IDs that follow, in ID order, and
// reads their leases and whether the queue is paused.
const lockLeasesSQL = `SELECT id, token, state, held, EXISTS (SELECT 1 FROM {Q} q WHERE q.queue = ? AND q.paused = 1)
FROM {T} WHERE queue = ? AND id IN (%s) ORDER BY id FOR UPDATE`

// deleteSQL acks the rows of the IDs that follow, locked by
// lockLeasesSQL.
const deleteSQL = `DELETE FROM {T} WHERE queue = ? AND id IN (%s)`

// unholdSQL confirms the rows that follow, locked by lockLeasesSQL, and
// moves the deadline of those whose by (µs) is above 0 to by from now,
// each with its own seq (the statement's plus its place). Each row: id,
// by, place.
const unholdSQL = `UPDATE {T} t JOIN (%s) v ON t.queue = ? AND t.id = v.id
SET t.held = 0, t.ts = IF(v.by_us > 0, {NOW} + INTERVAL v.by_us MICROSECOND, t.ts),
	t.seq = IF(v.by_us > 0, {SEQ} + v.place, t.seq)`

// maxBatch bounds the calls of one batch.
const maxBatch = 500

// A leaseCall is an ack or a confirmation.
type leaseCall struct {
	store.LeaseRef
	confirm bool
	// by is a confirmation's ConfirmParams.By in microseconds, rounded
	// up: 0 keeps the deadline.
	by int64
}

func (l leaseCall) op() string {
	if l.confirm {
		return "confirm"
	}
	return "ack"
}

// Confirm implements store.Store: one statement, shared with the acks
// and confirmations of other goroutines under way at the same time. With
// p.By, that statement also moves the deadline to p.By (rounded up to the
// microsecond) from the database's now.
func (s *Store) Confirm(ctx context.Context, p store.ConfirmParams) error {
	return s.coalesced(ctx, leaseCall{LeaseRef: p.Lease, confirm: true, by: micros(max(p.By, 0))})
}

// Ack implements store.Store: one statement, which deletes the row,
// shared with the acks and confirmations of other goroutines under way at
// the same time.
func (s *Store) Ack(ctx context.Context, l store.LeaseRef) error {
	return s.coalesced(ctx, leaseCall{LeaseRef: l})
}

func (s *Store) coalesced(ctx context.Context, l leaseCall) error {
	if err := s.check(ctx, l.op()); err != nil {
		return err
	}
	return s.leases.Do(ctx, l)
}

// newLeaseCoalescer returns the coalescer of the acks and confirmations
// of s: those under way at once share a write, one call per ID.
func newLeaseCoalescer(s *Store) *coalesce.Coalescer[leaseCall] {
	return &coalesce.Coalescer[leaseCall]{
		Take: coalesce.Distinct(maxBatch, func(l leaseCall) string { return l.ID }),
		Send: func(batch []*coalesce.Call[leaseCall]) { s.sendLeases(batch) },
	}
}

// sendLeases writes the acks and confirmations of batch, and sets each
// call's outcome: nil, ErrLeaseLost, ErrPaused, or the write's error.
func (s *Store) sendLeases(batch []*coalesce.Call[leaseCall]) {
	ctx, cancel := coalesce.Context(batch)
	defer cancel()
	if len(batch) == 1 {
		c := batch[0]
		c.Err = s.write(ctx, c.Arg.op(), func(ctx context.Context) error { return s.one(ctx, c.Arg) })
		return
	}
	slices.SortFunc(batch, func(x, y *coalesce.Call[leaseCall]) int { return strings.Compare(x.Arg.ID, y.Arg.ID) })
	var outcome map[string]error
	err := s.write(ctx, "ack", func(ctx context.Context) error {
		return s.inTx(ctx, func(tx *sql.Tx) (err error) {
			outcome, err = s.many(ctx, tx, batch)
			return err
		})
	})
	for _, c := range batch {
		if err != nil {
			c.Err = err
		} else {
			c.Err = outcome[c.Arg.ID]
		}
	}
}

// one writes a lone ack or confirmation.
func (s *Store) one(ctx context.Context, l leaseCall) error {
	if !l.confirm {
		return ended(s.db.ExecContext(ctx, expand(ackSQL), s.queue, []byte(l.ID), l.Token))
	}
	r, err := s.db.ExecContext(ctx, expand(confirmSQL), l.by, l.by, l.by, s.queue, []byte(l.ID), l.Token, l.by, s.queue)
	if err != nil {
		return err
	}
	if n, err := r.RowsAffected(); err != nil || n > 0 {
		return err
	}
	// Not held (confirmed already, or handed out by its claim) with no by
	// to move the deadline, paused, or lost; or, with by, a deadline and
	// seq written again to the same microsecond (the server counts the
	// rows changed, not those found).
	held, paused, err := s.current(ctx, s.db, l.LeaseRef)
	switch {
	case err != nil:
		return err
	case held && paused:
		return store.ErrPaused
	case held:
		return s.one(ctx, l) // resumed meanwhile
	case l.by > 0:
		return s.one(ctx, l) // a later microsecond changes it
	}
	return nil
}

// many writes the acks and confirmations of batch (sorted by ID, one call
// per ID) in tx, and returns each one's outcome by ID.
func (s *Store) many(ctx context.Context, tx *sql.Tx, batch []*coalesce.Call[leaseCall]) (map[string]error, error) {
	args := []any{s.queue, s.queue}
	for _, c := range batch {
		args = append(args, []byte(c.Arg.ID))
	}
	rows, err := tx.QueryContext(ctx, expand(strings.Replace(lockLeasesSQL, "%s", placeholders(len(batch)), 1)), args...)
	if err != nil {
		return nil, err
	}
	type row struct {
		token        uint64
		state        int
		held, paused bool
	}
	found := make(map[string]row, len(batch))
	for rows.Next() {
		var (
			id []byte
			r  row
		)
		if err := rows.Scan(&id, &r.token, &r.state, &r.held, &r.paused); err != nil {
			rows.Close()
			return nil, err
		}
		found[string(id)] = r
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	outcome := make(map[string]error, len(batch))
	var acks [][]byte
	var confirms []leaseCall
	for _, c := range batch {
		r, ok := found[c.Arg.ID]
		switch {
		case !ok || r.state != 2 || r.token != c.Arg.Token:
			outcome[c.Arg.ID] = store.ErrLeaseLost
		case !c.Arg.confirm:
			acks = append(acks, []byte(c.Arg.ID))
		case r.held && r.paused:
			outcome[c.Arg.ID] = store.ErrPaused
		case r.held || c.Arg.by > 0:
			confirms = append(confirms, c.Arg)
		}
	}
	if len(acks) > 0 {
		q := expand(strings.Replace(deleteSQL, "%s", placeholders(len(acks)), 1))
		if _, err := tx.ExecContext(ctx, q, append([]any{s.queue}, asArgs(acks)...)...); err != nil {
			return nil, err
		}
	}
	if len(confirms) > 0 {
		var v strings.Builder
		args := make([]any, 0, 3*len(confirms)+1)
		for i, c := range confirms {
			if i > 0 {
				v.WriteString(" UNION ALL ")
			}
			v.WriteString("SELECT ? AS id, ? AS by_us, ? AS place")
			args = append(args, []byte(c.ID), c.by, i)
		}
		args = append(args, s.queue)
		if _, err := tx.ExecContext(ctx, expand(strings.Replace(unholdSQL, "%s", v.String(), 1)), args...); err != nil {
			return nil, err
		}
	}
	return outcome, nil
}
