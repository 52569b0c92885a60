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
// statements more.

// ackSQL deletes the message of a current lease.
//
//	queue, id, token
const ackSQL = `DELETE FROM {T} WHERE queue = ? AND id = ? AND token = ? AND state = 2`

// confirmSQL hands out a lease claimed ahead, unless the queue is paused.
//
//	queue, id, token, queue
const confirmSQL = `UPDATE {T} SET held = 0 WHERE queue = ? AND id = ? AND token = ? AND state = 2 AND held = 1
	AND NOT EXISTS (SELECT 1 FROM {Q} q WHERE q.queue = ? AND q.paused = 1)`

// lockLeasesSQL locks the rows of the IDs that follow, in ID order, and
// reads their leases and whether the queue is paused.
const lockLeasesSQL = `SELECT id, token, state, held, EXISTS (SELECT 1 FROM {Q} q WHERE q.queue = ? AND q.paused = 1)
FROM {T} WHERE queue = ? AND id IN (%s) ORDER BY id FOR UPDATE`

// deleteSQL and unholdSQL ack and confirm the rows of the IDs that
// follow, locked by lockLeasesSQL.
const (
	deleteSQL = `DELETE FROM {T} WHERE queue = ? AND id IN (%s)`
	unholdSQL = `UPDATE {T} SET held = 0 WHERE queue = ? AND id IN (%s)`
)

// maxBatch bounds the calls of one batch.
const maxBatch = 500

// A leaseCall is an ack or a confirmation.
type leaseCall struct {
	store.LeaseRef
	confirm bool
}

func (l leaseCall) op() string {
	if l.confirm {
		return "confirm"
	}
	return "ack"
}

// Confirm implements store.Store: one statement, shared with the acks
// and confirmations of other goroutines under way at the same time.
func (s *Store) Confirm(ctx context.Context, l store.LeaseRef) error {
	return s.coalesced(ctx, leaseCall{l, true})
}

// Ack implements store.Store: one statement, which deletes the row,
// shared with the acks and confirmations of other goroutines under way at
// the same time.
func (s *Store) Ack(ctx context.Context, l store.LeaseRef) error {
	return s.coalesced(ctx, leaseCall{l, false})
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
	r, err := s.db.ExecContext(ctx, expand(confirmSQL), s.queue, []byte(l.ID), l.Token, s.queue)
	if err != nil {
		return err
	}
	if n, err := r.RowsAffected(); err != nil || n > 0 {
		return err
	}
	// Not held (confirmed already, or handed out by its claim), paused,
	// or lost.
	held, paused, err := s.current(ctx, s.db, l.LeaseRef)
	switch {
	case err != nil:
		return err
	case held && paused:
		return store.ErrPaused
	case held:
		return s.one(ctx, l) // resumed meanwhile
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
	var acks, confirms [][]byte
	for _, c := range batch {
		r, ok := found[c.Arg.ID]
		switch {
		case !ok || r.state != 2 || r.token != c.Arg.Token:
			outcome[c.Arg.ID] = store.ErrLeaseLost
		case !c.Arg.confirm:
			acks = append(acks, []byte(c.Arg.ID))
		case r.held && r.paused:
			outcome[c.Arg.ID] = store.ErrPaused
		case r.held:
			confirms = append(confirms, []byte(c.Arg.ID))
		}
	}
	for _, w := range []struct {
		sql string
		ids [][]byte
	}{{deleteSQL, acks}, {unholdSQL, confirms}} {
		if len(w.ids) == 0 {
			continue
		}
		q := expand(strings.Replace(w.sql, "%s", placeholders(len(w.ids)), 1))
		if _, err := tx.ExecContext(ctx, q, append([]any{s.queue}, asArgs(w.ids)...)...); err != nil {
			return nil, err
		}
	}
	return outcome, nil
}
