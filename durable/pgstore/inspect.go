package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// Reading what the queue holds: Get, List and Stats, each one
// statement that changes nothing.

// infoColumns are the columns of a store.Info, read by scanInfo.
const infoColumns = `id, payload, state, due, deadline, died_at, attempt, last_error, enqueued_at,
	kind, max_attempts, timeout_ns`

// getSQL reads one message.
//
//	$1 queue, $2 id
const getSQL = `SELECT ` + infoColumns + ` FROM {T} WHERE queue = $1::text AND id = $2::bytea`

// listSQL reads a page of the messages of one state, in the state's
// order, from its index: {COL} is the state's instant and {STATE} its
// number; {AFTER} is empty for the first page, or starts after the
// position ($3, $4).
//
//	$1 queue, $2 limit, $3 $4 the cursor's position
const listSQL = `SELECT ` + infoColumns + `, {COL}, seq FROM {T}
WHERE queue = $1::text AND state = {STATE} {AFTER}
ORDER BY {COL}, seq LIMIT $2::bigint`

const listAfterSQL = `AND ({COL}, seq) > ($3::timestamptz, $4::bigint)`

// statsSQL counts the messages of each state, each on its state's index,
// and reads the earliest due time and whether the queue is paused.
//
//	$1 queue
const statsSQL = `SELECT
	(SELECT count(*) FROM {T} WHERE queue = $1::text AND state = 1),
	(SELECT count(*) FROM {T} WHERE queue = $1::text AND state = 2),
	(SELECT count(*) FROM {T} WHERE queue = $1::text AND state = 3),
	(SELECT due FROM {T} WHERE queue = $1::text AND state = 1 ORDER BY due, seq LIMIT 1),
	EXISTS (SELECT 1 FROM {QUEUES} WHERE queue = $1::text AND paused)`

// scanInfo reads the infoColumns of a row, and then into extra.
func scanInfo(row pgx.Row, extra ...any) (store.Info, error) {
	var (
		id, payload, lastError []byte
		state                  int16
		attempt                int32
		due, enqueuedAt        time.Time
		deadline, diedAt       *time.Time
		kind                   []byte
		maxAttempts            int32
		timeout                int64
	)
	err := row.Scan(append([]any{&id, &payload, &state, &due, &deadline, &diedAt, &attempt, &lastError, &enqueuedAt,
		&kind, &maxAttempts, &timeout}, extra...)...)
	if err != nil {
		return store.Info{}, err
	}
	if payload == nil {
		payload = []byte{}
	}
	info := store.Info{ID: string(id), Kind: string(kind), Payload: payload, MaxAttempts: int(maxAttempts),
		Timeout: time.Duration(timeout), State: store.State(state), Attempt: int(attempt),
		LastError: string(lastError), EnqueuedAt: enqueuedAt}
	switch info.State {
	case store.Pending:
		info.Due = due
	case store.InFlight:
		info.Deadline = orZero(deadline)
	case store.Dead:
		info.DiedAt = orZero(diedAt)
	}
	return info, nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, id string) (store.Info, error) {
	if err := s.check(); err != nil {
		return store.Info{}, err
	}
	info, err := scanInfo(s.pool.QueryRow(ctx, s.sql.get, s.queue, []byte(id)))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Info{}, fmt.Errorf("%w: %q", store.ErrNotFound, id)
	}
	if err != nil {
		return store.Info{}, wrap("get", err)
	}
	return info, nil
}

// List implements store.Store: one statement, a range of the state's
// index from the cursor, O(log n) plus the page. Its cursors are
// positions, as the contract requires (see formatCursor).
func (s *Store) List(ctx context.Context, p store.ListParams) ([]store.Info, string, error) {
	st, cursor, limit := p.State, p.Cursor, p.Limit
	if st != store.Pending && st != store.InFlight && st != store.Dead {
		return nil, "", fmt.Errorf("pgstore: List of an invalid state %v", st)
	}
	var (
		at  time.Time
		seq int64
	)
	if cursor != "" {
		var err error
		if at, seq, err = parseCursor(st, cursor); err != nil {
			return nil, "", err
		}
	}
	if err := s.check(); err != nil {
		return nil, "", err
	}
	limit = max(limit, 1)
	sql, args := s.sql.list[st][0], []any{s.queue, int64(limit) + 1}
	if cursor != "" {
		sql, args = s.sql.list[st][1], append(args, at, seq)
	}
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, "", wrap("list", err)
	}
	defer rows.Close()
	var (
		infos []store.Info
		next  string
	)
	for rows.Next() {
		if len(infos) == limit {
			return infos, next, nil // more after this page
		}
		var (
			pos    time.Time
			posSeq int64
		)
		info, err := scanInfo(rows, &pos, &posSeq)
		if err != nil {
			return nil, "", wrap("list", err)
		}
		infos = append(infos, info)
		next = formatCursor(st, pos, posSeq)
	}
	if err := rows.Err(); err != nil {
		return nil, "", wrap("list", err)
	}
	return infos, "", nil
}

// Stats implements store.Store: one statement, which counts the entries
// of the queue in each state's index, O(n) in the queue's size.
func (s *Store) Stats(ctx context.Context) (store.Stats, error) {
	if err := s.check(); err != nil {
		return store.Stats{}, err
	}
	var (
		pending, inFlight, dead int64
		nextDue                 *time.Time
		paused                  bool
	)
	if err := s.pool.QueryRow(ctx, s.sql.stats, s.queue).Scan(&pending, &inFlight, &dead, &nextDue, &paused); err != nil {
		return store.Stats{}, wrap("stats", err)
	}
	return store.Stats{Pending: int(pending), InFlight: int(inFlight), Dead: int(dead), NextDue: orZero(nextDue),
		Paused: paused}, nil
}
