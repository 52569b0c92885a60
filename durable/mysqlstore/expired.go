package mysqlstore

import (
	"context"
	"database/sql"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// expiredSQL reads up to ? leases whose deadline has passed on the
// database's clock, earliest first, each with whether it is held (claimed
// ahead and never confirmed: store.ExpiredLease.Held), and the hints: one
// row of hints alone if there is none.
//
//	queue, queue, queue, limit
const expiredSQL = `SELECT US(n.cnow), n.nd, n.ndl, e.id, e.token, e.attempt, US(e.ts), e.held, e.max_attempts
FROM (SELECT {NOW} AS cnow,
	(SELECT US(p.ts) FROM {T} p WHERE p.queue = ? AND p.state = 1 ORDER BY p.ts, p.seq LIMIT 1) AS nd,
	(SELECT US(f.ts) FROM {T} f WHERE f.queue = ? AND f.state = 2 ORDER BY f.ts, f.seq LIMIT 1) AS ndl) n
LEFT JOIN (SELECT x.id, x.token, x.attempt, x.ts, x.seq, x.held, x.max_attempts FROM {T} x
	WHERE x.queue = ? AND x.state = 2 AND x.ts <= {NOW} ORDER BY x.ts, x.seq LIMIT ?) e ON 1 = 1
ORDER BY e.ts, e.seq`

// Expired implements store.Store: one statement, which changes nothing.
// A limit above MaxReap is cut to it.
func (s *Store) Expired(ctx context.Context, limit int) (store.ExpiredLeases, error) {
	if err := s.check(ctx, "expired"); err != nil {
		return store.ExpiredLeases{}, err
	}
	rows, err := s.db.QueryContext(ctx, expand(expiredSQL), s.queue, s.queue, s.queue, max(0, min(limit, MaxReap)))
	if err != nil {
		return store.ExpiredLeases{}, wrap("expired", err)
	}
	defer rows.Close()
	var x store.ExpiredLeases
	for rows.Next() {
		var (
			now                        int64
			nd, ndl, token, attempt, d sql.NullInt64
			maxAttempts                sql.NullInt64
			held                       sql.NullBool
			id                         []byte
		)
		if err := rows.Scan(&now, &nd, &ndl, &id, &token, &attempt, &d, &held, &maxAttempts); err != nil {
			return store.ExpiredLeases{}, wrap("expired", err)
		}
		x.Now, x.NextDue, x.NextDeadline = instant(now), orZero(nd), orZero(ndl)
		if d.Valid {
			x.Leases = append(x.Leases, store.ExpiredLease{ID: string(id), Token: uint64(token.Int64),
				Attempt: int(attempt.Int64), Deadline: instant(d.Int64), Held: held.Bool,
				MaxAttempts: int(maxAttempts.Int64)})
		}
	}
	if err := rows.Err(); err != nil {
		return store.ExpiredLeases{}, wrap("expired", err)
	}
	return x, nil
}
