package redisstore

import "context"

// SetPaused implements store.Store: one script call per shard (see
// pauseScript), which sets or deletes the field "" of the shard's meta
// hash; a resume that changes a shard publishes on its wake channel, so
// that the receivers of every process claim again. With one shard it is
// atomic. With shards, the shards are written in turn (on a cluster
// they are different slots): while the call runs, a Claim may find some
// shards paused and others not, and the shards written are kept if a
// later one fails (call it again). Stats says paused if any shard is.
func (s *Store) SetPaused(ctx context.Context, paused bool) error {
	arg := 0
	if paused {
		arg = 1
	}
	for sh := range s.shards {
		if _, err := s.run(ctx, pauseScript, sh, arg); err != nil {
			return wrap("pause", err)
		}
	}
	return nil
}
