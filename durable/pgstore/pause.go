package pgstore

import (
	"context"
	"fmt"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// SetPaused implements durable.Store: PostgreSQL queues cannot be paused
// yet, and it returns an error wrapping durable.ErrPauseUnsupported,
// changing nothing (Stats.Paused is always false). Pausing needs the
// flag read inside the claim statement and Confirm's, which are not
// changed yet.
func (s *Store) SetPaused(ctx context.Context, paused bool) error {
	if err := s.check(); err != nil {
		return err
	}
	return fmt.Errorf("pgstore: %w", durable.ErrPauseUnsupported)
}
