package mysqlstore

import "context"

// setPausedSQL sets the paused flag of a queue. queue, paused
const setPausedSQL = `INSERT INTO {Q} (queue, paused) VALUES (?, ?) ON DUPLICATE KEY UPDATE paused = VALUES(paused)`

// SetPaused implements store.Pauser: one statement, which writes the
// queue's flag in the table of the queues, read by every claim and
// confirmation of a lease claimed ahead. A resume wakes the receivers of
// this process at once, and those of others at their next poll (see the
// package doc's Wake-ups).
func (s *Store) SetPaused(ctx context.Context, paused bool) error {
	err := s.write(ctx, "setting the paused flag", func(ctx context.Context) error {
		_, err := s.db.ExecContext(ctx, expand(setPausedSQL), s.queue, paused)
		return err
	})
	if err == nil && !paused {
		s.wake.local()
	}
	return err
}
