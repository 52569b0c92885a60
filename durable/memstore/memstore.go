// Package memstore is a store.Store held in memory: the reference
// implementation of the Store contract, written to be read as its
// specification, and a store for tests that need no file and no server.
//
// Every message lives in one map, under one mutex. A message's place in
// the order of its state is an instant and a sequence number: the instant
// is its due time (pending), its lease deadline (in flight) or its time of
// death (dead), and the sequence number, taken from one counter for every
// write, keeps the order of the writes among equal instants. Each method
// that needs an order sorts the messages of a state: plain, and fast
// enough for tests, not for a production backlog. Nothing is persisted:
// the messages go with the process. Handle opens another handle on the
// same messages, as a second process on one backend, or the store opened
// again after Close, would have.
//
// The rules that are the queue's rather than the store's come from
// package durable/store: Message.Validate and the cursor codec (Cursor);
// death, back-off, error texts and the dead letters' retention come in
// RetryParams, and reaping is durable.Reap over Expired and Retry.
// Package durable/storetest checks the store against the contract.
package memstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// Store is a handle on messages held in memory: New makes the messages
// and a first handle, Handle another. It is safe for concurrent use. It
// is not a Notifier: every queue that writes to it is in this process.
type Store struct {
	*backing
	closed bool // under mu: this handle is closed
}

// backing is what the handles of one store share: the messages, the
// series and the pause, under one mutex, on one clock.
type backing struct {
	clock clock.Clock

	mu     sync.Mutex
	msgs   map[string]*message
	series map[string]store.Series
	paused bool   // see SetPaused
	seq    uint64 // the last sequence number given (see message.seq)
	token  uint64 // the last fencing token given
}

var (
	_ store.Store        = (*Store)(nil)
	_ store.LocalClock   = (*Store)(nil)
	_ store.Pauser       = (*Store)(nil)
	_ store.SeriesKeeper = (*Store)(nil)
)

// A message is what the store holds under one ID.
type message struct {
	id      string
	payload []byte
	// kind, maxAttempts and timeout are the message's (see store.Message).
	kind        string
	maxAttempts int
	timeout     time.Duration
	state       store.State
	// at and seq are the message's place in its state's order: at is the
	// due time (pending), the lease deadline (in flight) or the time of
	// death (dead); seq orders equal instants by write.
	at  time.Time
	seq uint64
	// attempt counts the claims since the last Enqueue or Requeue; token
	// is the fencing token of the latest claim.
	attempt int
	token   uint64
	// held is true for a lease claimed ahead (see Claim) that
	// its holder has not confirmed yet: an Enqueue or Cancel takes it
	// back.
	held       bool
	lastError  string
	enqueuedAt time.Time
}

// New returns an empty store held in memory, on clock c (nil: the real
// clock).
func New(c clock.Clock) *Store {
	if c == nil {
		c = clock.New()
	}
	return &Store{backing: &backing{clock: c, msgs: make(map[string]*message), series: make(map[string]store.Series)}}
}

// Handle returns another handle on the messages of s, as a second process
// opening the same backend would have: each handle sees the writes of the
// others at once, and closing one leaves the others open. Handle may be
// called on a closed handle: the new one is the store opened again, as
// after a restart, with everything it held (leases in flight included).
func (s *Store) Handle() *Store { return &Store{backing: s.backing} }

// Clock implements store.LocalClock: it is the clock of New. A Queue on
// the same clock keeps the store's instants as they are.
func (s *Store) Clock() clock.Clock { return s.clock }

// lock takes the mutex, or returns ctx's error if ctx is done, or
// ErrClosed if the handle is closed (with the mutex free): a method given
// a cancelled ctx writes nothing. Every method but Close starts with it.
func (s *Store) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return store.ErrClosed
	}
	return nil
}

// place puts m in state st at instant at, after every write before it.
func (s *Store) place(m *message, st store.State, at time.Time) {
	s.seq++
	m.state, m.at, m.seq = st, at, s.seq
}

// sorted returns the messages in state st, in the state's order.
func (s *Store) sorted(st store.State) []*message {
	var out []*message
	for _, m := range s.msgs {
		if m.state == st {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, compare)
	return out
}

// compare orders two messages of one state: by instant, then by write.
func compare(a, b *message) int {
	if c := a.at.Compare(b.at); c != 0 {
		return c
	}
	return cmp.Compare(a.seq, b.seq)
}

// first returns the instant of the first message in state st, or the zero
// time if there is none.
func (s *Store) first(st store.State) time.Time {
	var best *message
	for _, m := range s.msgs {
		if m.state == st && (best == nil || compare(m, best) < 0) {
			best = m
		}
	}
	if best == nil {
		return time.Time{}
	}
	return best.at
}

// withLease calls f, under the mutex, with the in-flight message id if
// token is its current lease's; otherwise it returns ErrLeaseLost (or
// ErrClosed) and changes nothing. Confirm, Ack, Retry and Extend go
// through it.
func (s *Store) withLease(ctx context.Context, l store.LeaseRef, f func(m *message)) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	m := s.msgs[l.ID]
	if m == nil || m.state != store.InFlight || m.token != l.Token {
		return store.ErrLeaseLost
	}
	f(m)
	return nil
}

// end ends the lease of m: m dies, or is pending again after the delay.
func (s *Store) end(m *message, now time.Time, after time.Duration, dead bool) {
	m.held = false
	if dead {
		s.place(m, store.Dead, now)
		return
	}
	s.place(m, store.Pending, now.Add(max(after, 0)))
}

// Enqueue implements store.Store. It checks every message before it
// writes any; a later message of the same ID replaces an earlier one of
// msgs, as it would in two calls.
func (s *Store) Enqueue(ctx context.Context, msgs []store.Message) error {
	for i := range msgs {
		if err := msgs[i].Validate(); err != nil {
			return err
		}
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.enqueueLocked(msgs)
	return nil
}

// enqueueLocked writes msgs, checked, under the mutex.
func (s *Store) enqueueLocked(msgs []store.Message) {
	now := s.clock.Now()
	for _, in := range msgs {
		m := &message{id: in.ID, payload: in.Payload, kind: in.Kind, maxAttempts: in.MaxAttempts,
			timeout: in.Timeout, enqueuedAt: now}
		if old := s.msgs[in.ID]; old != nil {
			// A replacement keeps when the ID was first enqueued, and
			// nothing else: a lease on the old one is lost, held or not.
			m.enqueuedAt = old.enqueuedAt
		}
		due := in.Due
		if due.IsZero() {
			due = now
		}
		s.place(m, store.Pending, due)
		s.msgs[in.ID] = m
	}
}

// Cancel implements store.Store.
func (s *Store) Cancel(ctx context.Context, id string) (bool, error) {
	if err := s.lock(ctx); err != nil {
		return false, err
	}
	defer s.mu.Unlock()
	return s.cancelLocked(id)
}

// cancelLocked is Cancel under the mutex.
func (s *Store) cancelLocked(id string) (bool, error) {
	m := s.msgs[id]
	switch {
	case m == nil:
		return false, nil
	case m.state == store.InFlight && !m.held:
		return false, store.ErrInFlight
	}
	delete(s.msgs, id)
	return true, nil
}

// Claim implements store.Store.
func (s *Store) Claim(ctx context.Context, p store.ClaimParams) (store.Claimed, error) {
	if err := s.lock(ctx); err != nil {
		return store.Claimed{}, err
	}
	defer s.mu.Unlock()
	now := s.clock.Now()
	horizon := now.Add(max(p.Ahead, 0))
	var c store.Claimed
	if s.paused {
		// A paused queue leases nothing; its leases expire as usual.
		return store.Claimed{Now: now, NextDeadline: s.first(store.InFlight), Paused: true}, nil
	}
	for _, m := range s.sorted(store.Pending) {
		if len(c.Leases) >= p.Limit || m.at.After(horizon) {
			break
		}
		due := m.at
		ready := due
		if now.After(ready) {
			ready = now
		}
		s.token++
		m.attempt++
		m.token = s.token
		m.held = due.After(now) // due by now: handed out by the claim
		lease := p.Lease
		if m.held && p.HeldLease > 0 && len(c.Leases) >= p.Limit-max(p.Held, 0) {
			lease = p.HeldLease
		}
		s.place(m, store.InFlight, ready.Add(lease))
		c.Leases = append(c.Leases, store.Lease{
			Message:   m.message(due),
			Attempt:   m.attempt,
			Token:     m.token,
			Deadline:  m.at,
			Ready:     ready,
			Ahead:     m.held,
			LastError: m.lastError,
		})
	}
	for _, m := range s.msgs {
		if m.state == store.Pending && !m.at.After(horizon) {
			c.DueSoon++
		}
	}
	c.Now = now
	c.NextDue, c.NextDeadline = s.first(store.Pending), s.first(store.InFlight)
	return c, nil
}

// Confirm implements store.Store: the lease is handed out, and an
// Enqueue or Cancel no longer takes it back; unless the queue is paused
// and the lease not confirmed yet: then ErrPaused, changing nothing.
func (s *Store) Confirm(ctx context.Context, p store.ConfirmParams) error {
	paused := false
	err := s.withLease(ctx, p.Lease, func(m *message) {
		if m.held && s.paused {
			paused = true
			return
		}
		m.held = false
		if p.By > 0 {
			s.place(m, store.InFlight, s.clock.Now().Add(p.By))
		}
	})
	if err == nil && paused {
		err = store.ErrPaused
	}
	return err
}

// SetPaused implements store.Store. The store is not a Notifier: a
// Queue's Resume wakes the queues of this process on the store itself.
func (s *Store) SetPaused(ctx context.Context, paused bool) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.paused = paused
	return nil
}

// Ack implements store.Store.
func (s *Store) Ack(ctx context.Context, l store.LeaseRef) error {
	return s.withLease(ctx, l, func(m *message) { delete(s.msgs, l.ID) })
}

// Retry implements store.Store. Whether the message dies, when it is
// due and its error text are the caller's; the store applies them.
func (s *Store) Retry(ctx context.Context, p store.RetryParams) error {
	lost := false
	err := s.withLease(ctx, p.Lease, func(m *message) {
		now := s.clock.Now()
		if p.Expired && m.at.After(now) {
			lost = true // extended since it was read: not expired
			return
		}
		if p.Error != "" {
			m.lastError = p.Error
		}
		if p.Unhanded && m.attempt > 0 {
			m.attempt-- // not handled: the claim's attempt is taken back
		}
		s.end(m, now, p.After, p.Dead)
		if p.Dead {
			s.trimDead(now, p.Retention)
		}
	})
	if err == nil && lost {
		err = store.ErrLeaseLost
	}
	return err
}

// Extend implements store.Store.
func (s *Store) Extend(ctx context.Context, p store.ExtendParams) error {
	return s.withLease(ctx, p.Lease, func(m *message) { s.place(m, store.InFlight, s.clock.Now().Add(p.By)) })
}

// Expired implements store.Store. It only reads.
func (s *Store) Expired(ctx context.Context, limit int) (store.ExpiredLeases, error) {
	if err := s.lock(ctx); err != nil {
		return store.ExpiredLeases{}, err
	}
	defer s.mu.Unlock()
	now := s.clock.Now()
	e := store.ExpiredLeases{Now: now, NextDue: s.first(store.Pending), NextDeadline: s.first(store.InFlight)}
	for _, m := range s.sorted(store.InFlight) {
		if len(e.Leases) >= limit || m.at.After(now) {
			break
		}
		e.Leases = append(e.Leases, store.ExpiredLease{ID: m.id, Token: m.token, Attempt: m.attempt, Deadline: m.at, Held: m.held,
			MaxAttempts: m.maxAttempts})
	}
	return e, nil
}

// message is m as a store.Message due at due.
func (m *message) message(due time.Time) store.Message {
	return store.Message{ID: m.id, Kind: m.kind, Payload: m.payload, Due: due, MaxAttempts: m.maxAttempts, Timeout: m.timeout}
}

// info is what Get and List tell of m.
func (m *message) info() store.Info {
	info := store.Info{ID: m.id, Kind: m.kind, Payload: m.payload, MaxAttempts: m.maxAttempts, Timeout: m.timeout,
		State: m.state, Attempt: m.attempt, LastError: m.lastError, EnqueuedAt: m.enqueuedAt}
	switch m.state {
	case store.Pending:
		info.Due = m.at
	case store.InFlight:
		info.Deadline = m.at
	case store.Dead:
		info.DiedAt = m.at
	}
	return info
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, id string) (store.Info, error) {
	if err := s.lock(ctx); err != nil {
		return store.Info{}, err
	}
	defer s.mu.Unlock()
	m := s.msgs[id]
	if m == nil {
		return store.Info{}, fmt.Errorf("%w: %q", store.ErrNotFound, id)
	}
	return m.info(), nil
}

// List implements store.Store. Its cursors are store.Cursor's.
func (s *Store) List(ctx context.Context, p store.ListParams) ([]store.Info, string, error) {
	st, cursor, limit := p.State, p.Cursor, p.Limit
	if st != store.Pending && st != store.InFlight && st != store.Dead {
		return nil, "", fmt.Errorf("memstore: List of an invalid state %v", st)
	}
	after := &message{} // the position the page starts after
	if cursor != "" {
		c, err := store.ParseCursor(st, cursor)
		if err != nil {
			return nil, "", err
		}
		after.at, after.seq = c.At, c.Seq
	}
	if err := s.lock(ctx); err != nil {
		return nil, "", err
	}
	defer s.mu.Unlock()
	var infos []store.Info
	next := ""
	for _, m := range s.sorted(st) {
		if cursor != "" && compare(m, after) <= 0 {
			continue
		}
		if len(infos) == limit {
			return infos, next, nil // more after this page
		}
		infos = append(infos, m.info())
		next = store.Cursor{State: st, At: m.at, Seq: m.seq}.String()
	}
	return infos, "", nil
}

// trimDead deletes, under the mutex, the oldest dead letters beyond
// r.MaxCount and those that died before now-r.MaxAge, at most
// store.MaxTrim of them (see store.Retention).
func (s *Store) trimDead(now time.Time, r store.Retention) {
	dead := s.sorted(store.Dead)
	over := 0
	if r.MaxCount > 0 {
		over = len(dead) - r.MaxCount
	}
	for i, m := range dead {
		old := r.MaxAge > 0 && m.at.Before(now.Add(-r.MaxAge))
		if i >= store.MaxTrim || (i >= over && !old) {
			break
		}
		delete(s.msgs, m.id)
	}
}

// Requeue implements store.Store.
func (s *Store) Requeue(ctx context.Context, p store.RequeueParams) error {
	id, due := p.ID, p.Due
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	m := s.msgs[id]
	if m == nil || m.state != store.Dead {
		return fmt.Errorf("%w: no dead message %q", store.ErrNotFound, id)
	}
	if due.IsZero() {
		due = s.clock.Now()
	}
	m.attempt, m.lastError = 0, ""
	s.place(m, store.Pending, due)
	return nil
}

// Stats implements store.Store.
func (s *Store) Stats(ctx context.Context) (store.Stats, error) {
	if err := s.lock(ctx); err != nil {
		return store.Stats{}, err
	}
	defer s.mu.Unlock()
	var st store.Stats
	for _, m := range s.msgs {
		switch m.state {
		case store.Pending:
			st.Pending++
		case store.InFlight:
			st.InFlight++
		case store.Dead:
			st.Dead++
		}
	}
	st.NextDue = s.first(store.Pending)
	st.Paused = s.paused
	return st, nil
}

// Close implements store.Store: the methods called after it return
// store.ErrClosed. It keeps the messages, which are gone only with the
// Store.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

// AdvanceSeries implements store.Store: under the mutex, the check, the
// cancel, the message and the state together.
func (s *Store) AdvanceSeries(ctx context.Context, p store.SeriesStep) (store.Series, bool, error) {
	if p.Message.ID != "" {
		if err := p.Message.Validate(); err != nil {
			return store.Series{}, false, err
		}
	}
	if err := s.lock(ctx); err != nil {
		return store.Series{}, false, err
	}
	defer s.mu.Unlock()
	cur := s.series[p.Name]
	if !cur.Last.Equal(p.ExpectLast) || cur.Fingerprint != p.ExpectFingerprint {
		return cur, false, nil
	}
	if p.Cancel != "" {
		_, _ = s.cancelLocked(p.Cancel) // one handed out stays: not an error here
	}
	next := store.Series{Name: p.Name, Fingerprint: p.Fingerprint, Last: p.Last, Next: p.Next, Pending: cur.Pending}
	if p.Message.ID != "" {
		s.enqueueLocked([]store.Message{p.Message})
		next.Pending = p.Message.ID
	}
	s.series[p.Name] = next
	return next, true, nil
}

// Series implements store.Store.
func (s *Store) Series(ctx context.Context, name string) (store.Series, error) {
	if err := s.lock(ctx); err != nil {
		return store.Series{}, err
	}
	defer s.mu.Unlock()
	sr, ok := s.series[name]
	if !ok {
		return store.Series{}, fmt.Errorf("%w: no series %q", store.ErrNotFound, name)
	}
	return sr, nil
}

// ListSeries implements store.Store.
func (s *Store) ListSeries(ctx context.Context) ([]store.Series, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make([]store.Series, 0, len(s.series))
	for _, sr := range s.series {
		out = append(out, sr)
	}
	slices.SortFunc(out, func(a, b store.Series) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// DeleteSeries implements store.Store.
func (s *Store) DeleteSeries(ctx context.Context, name string) (bool, error) {
	if err := s.lock(ctx); err != nil {
		return false, err
	}
	defer s.mu.Unlock()
	sr, ok := s.series[name]
	if !ok {
		return false, nil
	}
	delete(s.series, name)
	if sr.Pending != "" {
		_, _ = s.cancelLocked(sr.Pending)
	}
	return true, nil
}
