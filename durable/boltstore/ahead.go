package boltstore

import (
	"context"
	"sync"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// aheadLeases tracks the leases a BoltStore gave out ahead of their due
// time and that their holders have not confirmed yet. It is in memory
// only: the file is held by one process, so every holder, and every
// Enqueue or Cancel that may take a message back, is in this process.
// A Confirm is thus a map lookup, not a write, and adds no fsync to the
// delivery. After a restart the file's in-flight messages count as
// handed out: their holders are gone with the old process, and their
// leases expire as usual.
//
// The decisions of Confirm and of the write transactions (Cancel,
// Enqueue) are taken under mu, so exactly one of them wins. A
// transaction marks the entry taken rather than deleting it, so that it
// decides the same if it runs again (see runBatch); the holder's Confirm
// deletes the entry. If the transaction then fails to commit, the
// message stays in flight with no holder able to confirm it: it comes
// back when its lease expires, late but not lost.
type aheadLeases struct {
	mu      sync.Mutex
	entries map[string]aheadEntry
	paused  bool // the queue is paused: Confirm refuses (see boltpause.go)
}

type aheadEntry struct {
	token uint64
	taken bool // replaced, cancelled or ended by a write: Confirm fails
}

// add records the lease token on id, claimed ahead.
func (a *aheadLeases) add(id string, token uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.entries == nil {
		a.entries = make(map[string]aheadEntry)
	}
	a.entries[id] = aheadEntry{token: token}
}

// take marks the unconfirmed lease token on id taken back, and reports
// whether there was one (token 0: whatever its token).
func (a *aheadLeases) take(id string, token uint64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.entries[id]
	if !ok || (token != 0 && e.token != token) {
		return false
	}
	e.taken = true
	a.entries[id] = e
	return true
}

// holds reports whether the lease token on id is claimed ahead and not
// confirmed (see store.ExpiredLease.Held). After a restart it knows of
// none: the leases of the old process count as handed out.
func (a *aheadLeases) holds(id string, token uint64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.entries[id]
	return ok && e.token == token && !e.taken
}

// forget drops the entry of id, whose lease a write ended (Ack, Retry,
// Reap).
func (a *aheadLeases) forget(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.entries, id)
}

// setPaused sets the paused flag Confirm reads.
func (a *aheadLeases) setPaused(paused bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.paused = paused
}

// confirm decides for the holder of token on id: found is false if the
// lease was not claimed ahead or was confirmed already, and otherwise ok
// says whether it may be handed out. The entry is gone after it, unless
// the queue is paused (paused true, and the entry kept, if it was not
// taken back: the holder releases it).
func (a *aheadLeases) confirm(id string, token uint64) (found, ok, paused bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, found := a.entries[id]
	if !found || e.token != token {
		return false, false, false
	}
	if a.paused && !e.taken {
		return true, false, true
	}
	delete(a.entries, id)
	return true, !e.taken, false
}

// Confirm implements store.Store. A lease claimed ahead is confirmed in memory
// (see aheadLeases), or refused with ErrPaused while the queue is paused;
// any other is checked with a read transaction. With p.By, the new
// deadline is then written as Extend writes it (a write transaction). After
// Close it returns ErrClosed, also for a lease claimed ahead.
func (s *Store) Confirm(ctx context.Context, p store.ConfirmParams) error {
	if err := s.confirm(ctx, p.Lease); err != nil || p.By <= 0 {
		return err
	}
	//lint:ignore S1016 the two are different parameters that share their fields by chance, not a conversion
	return s.Extend(ctx, store.ExtendParams{Lease: p.Lease, By: p.By})
}

// confirm is Confirm without its By.
func (s *Store) confirm(ctx context.Context, l store.LeaseRef) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.closeMu.RLock()
	if s.closed {
		s.closeMu.RUnlock()
		return store.ErrClosed
	}
	found, ok, paused := s.ahead.confirm(l.ID, l.Token)
	s.closeMu.RUnlock()
	if found {
		if paused {
			return store.ErrPaused
		}
		if !ok {
			return store.ErrLeaseLost
		}
		return nil
	}
	return s.viewTxn(func(t *txn) error {
		_, err := t.leased(l)
		return err
	})
}
