package pgstore

import (
	"context"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// expiredSQL reads up to $2 leases whose deadline has passed on the
// database's clock, earliest first, and the hints: one row of hints alone
// if there is none.
//
//	$1 queue, $2 limit
const expiredSQL = `WITH n AS MATERIALIZED (SELECT clock_timestamp() AS now)
SELECT e.id, e.token, e.attempt, e.deadline, e.held, e.max_attempts, n.now,
	(SELECT p.due FROM {T} p WHERE p.queue = $1::text AND p.state = 1 ORDER BY p.due, p.seq LIMIT 1),
	(SELECT f.deadline FROM {T} f WHERE f.queue = $1::text AND f.state = 2 ORDER BY f.deadline, f.seq LIMIT 1)
FROM n LEFT JOIN LATERAL (
	SELECT x.id, x.token, x.attempt, x.deadline, x.held, x.max_attempts, x.seq FROM {T} x
	WHERE x.queue = $1::text AND x.state = 2 AND x.deadline <= n.now
	ORDER BY x.deadline, x.seq LIMIT $2::bigint
) e ON true
ORDER BY e.deadline, e.seq`

// Expired implements store.Store: one statement, which changes nothing.
// A limit above MaxReap is cut to it.
func (s *Store) Expired(ctx context.Context, limit int) (store.ExpiredLeases, error) {
	if err := s.check(); err != nil {
		return store.ExpiredLeases{}, err
	}
	rows, err := s.pool.Query(ctx, s.sql.expired, s.queue, int64(max(0, min(limit, MaxReap))))
	if err != nil {
		return store.ExpiredLeases{}, wrap("expired", err)
	}
	defer rows.Close()
	var x store.ExpiredLeases
	for rows.Next() {
		var (
			id                    []byte
			token                 *int64
			attempt               *int32
			deadline              *time.Time
			held                  *bool
			maxAttempts           *int32
			now                   time.Time
			nextDue, nextDeadline *time.Time
		)
		if err := rows.Scan(&id, &token, &attempt, &deadline, &held, &maxAttempts, &now, &nextDue, &nextDeadline); err != nil {
			return store.ExpiredLeases{}, wrap("expired", err)
		}
		x.Now, x.NextDue, x.NextDeadline = now, orZero(nextDue), orZero(nextDeadline)
		if id == nil {
			continue
		}
		x.Leases = append(x.Leases, store.ExpiredLease{ID: string(id), Token: uint64(*token), Attempt: int(*attempt), Deadline: *deadline,
			Held: held != nil && *held, MaxAttempts: int(*maxAttempts)})
	}
	if err := rows.Err(); err != nil {
		return store.ExpiredLeases{}, wrap("expired", err)
	}
	return x, nil
}
