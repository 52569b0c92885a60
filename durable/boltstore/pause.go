package boltstore

import (
	"bytes"
	"context"
)

// Pausing the file's queue (see Store.SetPaused): the meta key "paused"
// holds 1 while it is paused, and is absent otherwise. Claim reads it in
// its transaction. Confirm, which is a lookup in memory for a lease
// claimed ahead (see aheadLeases), reads the copy in aheadLeases, which
// SetPaused updates once its write is committed, and Open loads.

// metaPaused is the meta key of the paused flag.
var metaPaused = []byte("paused")

// pausedIn reports whether the queue is paused in transaction t.
func (t *txn) pausedIn() bool {
	return bytes.Equal(t.meta.Get(metaPaused), []byte{1})
}

// SetPaused implements Store: one write transaction, then the copy that
// Confirm reads. The file is held by this process only: a Queue's Resume
// wakes the queues of this process on the store itself (see Queue.Resume).
func (s *Store) SetPaused(ctx context.Context, paused bool) error {
	err := s.writeTxn(ctx, func(t *txn) (bool, error) {
		if t.pausedIn() == paused {
			return false, nil
		}
		if paused {
			return true, t.meta.Put(metaPaused, []byte{1})
		}
		return true, t.meta.Delete(metaPaused)
	})
	if err == nil {
		s.ahead.setPaused(paused)
	}
	return err
}

// loadPaused sets the copy of the paused flag from the file, on open.
func (s *Store) loadPaused() error {
	return s.viewTxn(func(t *txn) error {
		s.ahead.setPaused(t.pausedIn())
		return nil
	})
}
