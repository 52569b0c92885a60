// Package memstore is a durable.Store held in memory: the reference
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
// the messages go with the process.
//
// The rules that are the queue's rather than the store's come from
// package durable: Message.Validate and the cursors of FormatCursor and
// ParseCursor; death, back-off and error texts come in RetryParams, and
// reaping is durable.Reap over Expired and Retry.
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

	"github.com/seed64e23a5c/timingwheel/durable"
)

// Store is a durable.Store held in memory. It is safe for concurrent use.
// It is not a Notifier: every queue that writes to it is in this process.
type Store struct {
	clock clock.Clock

	mu     sync.Mutex
	closed bool
	msgs   map[string]*message
	series map[string]durable.Series
	paused bool   // see SetPaused
	seq    uint64 // the last sequence number given (see message.seq)
	token  uint64 // the last fencing token given
}

var (
	_ durable.Store      = (*Store)(nil)
	_ durable.LocalClock = (*Store)(nil)
)

// A message is what the store holds under one ID.
type message struct {
	id      string
	payload []byte
	state   durable.State
	// at and seq are the message's place in its state's order: at is the
	// due time (pending), the lease deadline (in flight) or the time of
	// death (dead); seq orders equal instants by write.
	at  time.Time
	seq uint64
	// attempt counts the claims since the last Enqueue or Requeue; token
	// is the fencing token of the latest claim.
	attempt int
	token   uint64
	// held is true for a lease claimed ahead (or held, see Claim) that
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
	return &Store{clock: c, msgs: make(map[string]*message), series: make(map[string]durable.Series)}
}

// Clock implements durable.LocalClock: it is the clock of New. A Queue on
// the same clock keeps the store's instants as they are.
func (s *Store) Clock() clock.Clock { return s.clock }

// lock takes the mutex, or returns ErrClosed (with the mutex free) if the
// store is closed. Every method but Close starts with it.
func (s *Store) lock() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return durable.ErrClosed
	}
	return nil
}

// place puts m in state st at instant at, after every write before it.
func (s *Store) place(m *message, st durable.State, at time.Time) {
	s.seq++
	m.state, m.at, m.seq = st, at, s.seq
}

// sorted returns the messages in state st, in the state's order.
func (s *Store) sorted(st durable.State) []*message {
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
func (s *Store) first(st durable.State) time.Time {
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
func (s *Store) withLease(id string, token uint64, f func(m *message)) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	m := s.msgs[id]
	if m == nil || m.state != durable.InFlight || m.token != token {
		return durable.ErrLeaseLost
	}
	f(m)
	return nil
}

// end ends the lease of m: m dies, or is pending again after the delay.
func (s *Store) end(m *message, now time.Time, after time.Duration, dead bool) {
	m.held = false
	if dead {
		s.place(m, durable.Dead, now)
		return
	}
	s.place(m, durable.Pending, now.Add(max(after, 0)))
}

// Enqueue implements durable.Store. It checks every message before it
// writes any; a later message of the same ID replaces an earlier one of
// msgs, as it would in two calls.
func (s *Store) Enqueue(ctx context.Context, msgs []durable.Message) error {
	for i := range msgs {
		if err := msgs[i].Validate(); err != nil {
			return err
		}
	}
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.enqueueLocked(msgs)
	return nil
}

// enqueueLocked writes msgs, checked, under the mutex.
func (s *Store) enqueueLocked(msgs []durable.Message) {
	now := s.clock.Now()
	for _, in := range msgs {
		m := &message{id: in.ID, payload: in.Payload, enqueuedAt: now}
		if old := s.msgs[in.ID]; old != nil {
			// A replacement keeps when the ID was first enqueued, and
			// nothing else: a lease on the old one is lost, held or not.
			m.enqueuedAt = old.enqueuedAt
		}
		due := in.Due
		if due.IsZero() {
			due = now
		}
		s.place(m, durable.Pending, due)
		s.msgs[in.ID] = m
	}
}

// Cancel implements durable.Store.
func (s *Store) Cancel(ctx context.Context, id string) (bool, error) {
	if err := s.lock(); err != nil {
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
	case m.state == durable.InFlight && !m.held:
		return false, durable.ErrInFlight
	}
	delete(s.msgs, id)
	return true, nil
}

// Claim implements durable.Store.
func (s *Store) Claim(ctx context.Context, p durable.ClaimParams) (durable.Claimed, error) {
	if err := s.lock(); err != nil {
		return durable.Claimed{}, err
	}
	defer s.mu.Unlock()
	now := s.clock.Now()
	horizon := now.Add(max(p.Ahead, 0))
	handOut := p.Limit - max(p.Held, 0) // how many due by now the claim may hand out
	var c durable.Claimed
	if s.paused {
		// A paused queue leases nothing; its leases expire as usual.
		return durable.Claimed{Now: now, NextDeadline: s.first(durable.InFlight), Paused: true}, nil
	}
	for _, m := range s.sorted(durable.Pending) {
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
		m.held = due.After(now) || handOut <= 0
		if !m.held {
			handOut--
		}
		s.place(m, durable.InFlight, ready.Add(p.Lease))
		c.Leases = append(c.Leases, durable.Lease{
			Message:   durable.Message{ID: m.id, Payload: m.payload, Due: due},
			Attempt:   m.attempt,
			Token:     m.token,
			Deadline:  m.at,
			Ready:     ready,
			Ahead:     m.held,
			LastError: m.lastError,
		})
	}
	for _, m := range s.msgs {
		if m.state == durable.Pending && !m.at.After(horizon) {
			c.DueSoon++
		}
	}
	c.Now = now
	c.NextDue, c.NextDeadline = s.first(durable.Pending), s.first(durable.InFlight)
	return c, nil
}

// Confirm implements durable.Store: the lease is handed out, and an
// Enqueue or Cancel no longer takes it back; unless the queue is paused
// and the lease not confirmed yet: then ErrPaused, changing nothing.
func (s *Store) Confirm(ctx context.Context, id string, token uint64) error {
	paused := false
	err := s.withLease(id, token, func(m *message) {
		if m.held && s.paused {
			paused = true
			return
		}
		m.held = false
	})
	if err == nil && paused {
		err = durable.ErrPaused
	}
	return err
}

// SetPaused implements durable.Store. The store is not a Notifier: a
// Queue's Resume wakes the queues of this process on the store itself.
func (s *Store) SetPaused(ctx context.Context, paused bool) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.paused = paused
	return nil
}

// Ack implements durable.Store.
func (s *Store) Ack(ctx context.Context, id string, token uint64) error {
	return s.withLease(id, token, func(m *message) { delete(s.msgs, id) })
}

// Retry implements durable.Store. Whether the message dies, when it is
// due and its error text are the caller's; the store applies them.
func (s *Store) Retry(ctx context.Context, id string, token uint64, p durable.RetryParams) error {
	lost := false
	err := s.withLease(id, token, func(m *message) {
		now := s.clock.Now()
		if p.Expired && m.at.After(now) {
			lost = true // extended since it was read: not expired
			return
		}
		if p.Error != "" {
			m.lastError = p.Error
		}
		s.end(m, now, p.After, p.Dead)
	})
	if err == nil && lost {
		err = durable.ErrLeaseLost
	}
	return err
}

// Release implements durable.Store: the message is pending again, its
// attempt and LastError as they are.
func (s *Store) Release(ctx context.Context, id string, token uint64, after time.Duration) error {
	return s.withLease(id, token, func(m *message) { s.end(m, s.clock.Now(), after, false) })
}

// Extend implements durable.Store.
func (s *Store) Extend(ctx context.Context, id string, token uint64, by time.Duration) error {
	return s.withLease(id, token, func(m *message) { s.place(m, durable.InFlight, s.clock.Now().Add(by)) })
}

// Expired implements durable.Store. It only reads.
func (s *Store) Expired(ctx context.Context, limit int) (durable.ExpiredLeases, error) {
	if err := s.lock(); err != nil {
		return durable.ExpiredLeases{}, err
	}
	defer s.mu.Unlock()
	now := s.clock.Now()
	e := durable.ExpiredLeases{Now: now, NextDue: s.first(durable.Pending), NextDeadline: s.first(durable.InFlight)}
	for _, m := range s.sorted(durable.InFlight) {
		if len(e.Leases) >= limit || m.at.After(now) {
			break
		}
		e.Leases = append(e.Leases, durable.ExpiredLease{ID: m.id, Token: m.token, Attempt: m.attempt, Deadline: m.at})
	}
	return e, nil
}

// info is what Get and List tell of m.
func (m *message) info() durable.Info {
	info := durable.Info{ID: m.id, Payload: m.payload, State: m.state, Attempt: m.attempt,
		LastError: m.lastError, EnqueuedAt: m.enqueuedAt}
	switch m.state {
	case durable.Pending:
		info.Due = m.at
	case durable.InFlight:
		info.Deadline = m.at
	case durable.Dead:
		info.DiedAt = m.at
	}
	return info
}

// Get implements durable.Store.
func (s *Store) Get(ctx context.Context, id string) (durable.Info, error) {
	if err := s.lock(); err != nil {
		return durable.Info{}, err
	}
	defer s.mu.Unlock()
	m := s.msgs[id]
	if m == nil {
		return durable.Info{}, fmt.Errorf("%w: %q", durable.ErrNotFound, id)
	}
	return m.info(), nil
}

// List implements durable.Store. Its cursors are those of
// durable.FormatCursor.
func (s *Store) List(ctx context.Context, st durable.State, cursor string, limit int) ([]durable.Info, string, error) {
	if st != durable.Pending && st != durable.InFlight && st != durable.Dead {
		return nil, "", fmt.Errorf("memstore: List of an invalid state %v", st)
	}
	after := &message{} // the position the page starts after
	if cursor != "" {
		at, seq, err := durable.ParseCursor(st, cursor)
		if err != nil {
			return nil, "", err
		}
		after.at, after.seq = at, seq
	}
	if err := s.lock(); err != nil {
		return nil, "", err
	}
	defer s.mu.Unlock()
	var infos []durable.Info
	next := ""
	for _, m := range s.sorted(st) {
		if cursor != "" && compare(m, after) <= 0 {
			continue
		}
		if len(infos) == limit {
			return infos, next, nil // more after this page
		}
		infos = append(infos, m.info())
		next = durable.FormatCursor(st, m.at, m.seq)
	}
	return infos, "", nil
}

// DeadLetters implements durable.Store. It keeps every dead letter until
// a Requeue, Cancel or Enqueue of its ID: it has no retention policy.
func (s *Store) DeadLetters(ctx context.Context, limit int) ([]durable.Message, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []durable.Message
	for _, m := range s.sorted(durable.Dead) {
		if len(out) >= limit {
			break
		}
		out = append(out, durable.Message{ID: m.id, Payload: m.payload, Due: m.at})
	}
	return out, nil
}

// Requeue implements durable.Store.
func (s *Store) Requeue(ctx context.Context, id string, due time.Time) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	m := s.msgs[id]
	if m == nil || m.state != durable.Dead {
		return fmt.Errorf("%w: no dead message %q", durable.ErrNotFound, id)
	}
	if due.IsZero() {
		due = s.clock.Now()
	}
	m.attempt, m.lastError = 0, ""
	s.place(m, durable.Pending, due)
	return nil
}

// Stats implements durable.Store.
func (s *Store) Stats(ctx context.Context) (durable.Stats, error) {
	if err := s.lock(); err != nil {
		return durable.Stats{}, err
	}
	defer s.mu.Unlock()
	var st durable.Stats
	for _, m := range s.msgs {
		switch m.state {
		case durable.Pending:
			st.Pending++
		case durable.InFlight:
			st.InFlight++
		case durable.Dead:
			st.Dead++
		}
	}
	st.NextDue = s.first(durable.Pending)
	st.Paused = s.paused
	return st, nil
}

// Close implements durable.Store: the methods called after it return
// durable.ErrClosed. It keeps the messages, which are gone only with the
// Store.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

// AdvanceSeries implements durable.Store: under the mutex, the check, the
// cancel, the message and the state together.
func (s *Store) AdvanceSeries(ctx context.Context, p durable.SeriesStep) (durable.Series, bool, error) {
	if p.Message.ID != "" {
		if err := p.Message.Validate(); err != nil {
			return durable.Series{}, false, err
		}
	}
	if err := s.lock(); err != nil {
		return durable.Series{}, false, err
	}
	defer s.mu.Unlock()
	cur := s.series[p.Name]
	if !cur.Last.Equal(p.ExpectLast) || cur.Fingerprint != p.ExpectFingerprint {
		return cur, false, nil
	}
	if p.Cancel != "" {
		_, _ = s.cancelLocked(p.Cancel) // one handed out stays: not an error here
	}
	next := durable.Series{Name: p.Name, Fingerprint: p.Fingerprint, Last: p.Last, Next: p.Next, Pending: cur.Pending}
	if p.Message.ID != "" {
		s.enqueueLocked([]durable.Message{p.Message})
		next.Pending = p.Message.ID
	}
	s.series[p.Name] = next
	return next, true, nil
}

// Series implements durable.Store.
func (s *Store) Series(ctx context.Context, name string) (durable.Series, error) {
	if err := s.lock(); err != nil {
		return durable.Series{}, err
	}
	defer s.mu.Unlock()
	sr, ok := s.series[name]
	if !ok {
		return durable.Series{}, fmt.Errorf("%w: no series %q", durable.ErrNotFound, name)
	}
	return sr, nil
}

// ListSeries implements durable.Store.
func (s *Store) ListSeries(ctx context.Context) ([]durable.Series, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make([]durable.Series, 0, len(s.series))
	for _, sr := range s.series {
		out = append(out, sr)
	}
	slices.SortFunc(out, func(a, b durable.Series) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// DeleteSeries implements durable.Store.
func (s *Store) DeleteSeries(ctx context.Context, name string) (bool, error) {
	if err := s.lock(); err != nil {
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
