package pgstore

import (
	"context"
)

// setPausedSQL sets the paused flag of the queue $1 to $2 and, on a
// resume, notifies the queue's channel $3 in the same statement: the
// receivers of every process hear of it at the commit.
const setPausedSQL = `WITH w AS (
	INSERT INTO {QUEUES} AS q (queue, paused) VALUES ($1::text, $2::boolean)
	ON CONFLICT (queue) DO UPDATE SET paused = excluded.paused
	RETURNING 1
)
SELECT count(*) FROM (SELECT pg_notify($3::text, '') FROM w WHERE NOT $2::boolean) x`

// SetPaused implements store.Store: one statement, which writes the
// queue's flag in the table of the queues, read by every claim and
// confirmation of the queue; a resume notifies the queue's receivers, in
// every process, as a new earliest message does.
func (s *Store) SetPaused(ctx context.Context, paused bool) error {
	if err := s.check(); err != nil {
		return err
	}
	var notified int64
	if err := s.pool.QueryRow(ctx, s.sql.setPaused, s.queue, paused, s.channel).Scan(&notified); err != nil {
		return wrap("setting the paused flag", err)
	}
	return nil
}
