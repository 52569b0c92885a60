package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// Reading messages: Get, List and Stats.

// infoColumns are the columns scanInfo reads.
const infoColumns = `id, kind, payload, max_attempts, timeout_ns, state, US(ts), attempt, last_error,
	US(enqueued_at), seq`

// getSQL reads one message. queue, id
const getSQL = `SELECT ` + infoColumns + ` FROM {T} WHERE queue = ? AND id = ?`

// listSQL reads a page of a state from its start, and listAfterSQL after
// a position, each a range of the index timingwheel_order.
//
//	queue, state, [at, at, seq,] limit
const (
	listSQL      = `SELECT ` + infoColumns + ` FROM {T} WHERE queue = ? AND state = ? ORDER BY ts, seq LIMIT ?`
	listAfterSQL = `SELECT ` + infoColumns + ` FROM {T} WHERE queue = ? AND state = ?
	AND (ts > ? OR (ts = ? AND seq > ?)) ORDER BY ts, seq LIMIT ?`
)

// statsSQL counts each state's entries of the queue in the index, and
// reads the earliest due time and the paused flag. queue ×5
const statsSQL = `SELECT
	(SELECT COUNT(*) FROM {T} WHERE queue = ? AND state = 1),
	(SELECT COUNT(*) FROM {T} WHERE queue = ? AND state = 2),
	(SELECT COUNT(*) FROM {T} WHERE queue = ? AND state = 3),
	(SELECT US(ts) FROM {T} WHERE queue = ? AND state = 1 ORDER BY ts, seq LIMIT 1),
	EXISTS (SELECT 1 FROM {Q} WHERE queue = ? AND paused = 1)`

type scanner interface{ Scan(dest ...any) error }

// scanInfo reads a row of infoColumns, and its position (ts in µs, seq).
func scanInfo(row scanner) (store.Info, int64, uint64, error) {
	var (
		id, kind, payload, lastError []byte
		maxAttempts, state, attempt  int
		timeout, ts, enqueuedAt      int64
		seq                          uint64
	)
	if err := row.Scan(&id, &kind, &payload, &maxAttempts, &timeout, &state, &ts, &attempt, &lastError,
		&enqueuedAt, &seq); err != nil {
		return store.Info{}, 0, 0, err
	}
	if payload == nil {
		payload = []byte{}
	}
	info := store.Info{ID: string(id), Kind: string(kind), Payload: payload, MaxAttempts: maxAttempts,
		Timeout: time.Duration(timeout), State: store.State(state), Attempt: attempt,
		LastError: string(lastError), EnqueuedAt: instant(enqueuedAt)}
	switch info.State {
	case store.Pending:
		info.Due = instant(ts)
	case store.InFlight:
		info.Deadline = instant(ts)
	case store.Dead:
		info.DiedAt = instant(ts)
	}
	return info, ts, seq, nil
}

// Get implements store.Store: one statement.
func (s *Store) Get(ctx context.Context, id string) (store.Info, error) {
	if err := s.check(ctx, "get"); err != nil {
		return store.Info{}, err
	}
	info, _, _, err := scanInfo(s.db.QueryRowContext(ctx, expand(getSQL), s.queue, []byte(id)))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Info{}, fmt.Errorf("%w: %q", store.ErrNotFound, id)
	}
	if err != nil {
		return store.Info{}, wrap("get", err)
	}
	return info, nil
}

// List implements store.Store: one statement, a range of the index from
// the cursor, O(log n) plus the page. Its cursors are store.Cursor
// positions: the row's instant (ts) and seq.
func (s *Store) List(ctx context.Context, p store.ListParams) ([]store.Info, string, error) {
	if !p.State.Valid() {
		return nil, "", fmt.Errorf("mysqlstore: List of an invalid state %v", p.State)
	}
	query, args := listSQL, []any{s.queue, int(p.State)}
	if p.Cursor != "" {
		c, err := store.ParseCursor(p.State, p.Cursor)
		if err != nil {
			return nil, "", err
		}
		if c.Key != "" || c.Seq > math.MaxInt64 || !store.InRange(c.At) {
			return nil, "", fmt.Errorf("%w: %q", store.ErrInvalidCursor, p.Cursor)
		}
		at := datetime(c.At)
		query, args = listAfterSQL, append(args, at, at, c.Seq)
	}
	if err := s.check(ctx, "list"); err != nil {
		return nil, "", err
	}
	limit := max(p.Limit, 1)
	rows, err := s.db.QueryContext(ctx, expand(query), append(args, limit+1)...)
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
		info, ts, seq, err := scanInfo(rows)
		if err != nil {
			return nil, "", wrap("list", err)
		}
		infos = append(infos, info)
		next = store.Cursor{State: p.State, At: instant(ts), Seq: seq}.String()
	}
	if err := rows.Err(); err != nil {
		return nil, "", wrap("list", err)
	}
	return infos, "", nil
}

// Stats implements store.Store: one statement, which counts the queue's
// entries of each state in the index, O(n) in the queue's size.
func (s *Store) Stats(ctx context.Context) (store.Stats, error) {
	if err := s.check(ctx, "stats"); err != nil {
		return store.Stats{}, err
	}
	var (
		st      store.Stats
		nextDue sql.NullInt64
	)
	q := s.queue
	if err := s.db.QueryRowContext(ctx, expand(statsSQL), q, q, q, q, q).Scan(&st.Pending, &st.InFlight, &st.Dead,
		&nextDue, &st.Paused); err != nil {
		return store.Stats{}, wrap("stats", err)
	}
	st.NextDue = orZero(nextDue)
	return st, nil
}
