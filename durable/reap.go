package durable

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// Reaping expired leases: Reap, and the queue's reap timer that runs it.

// Reap ends up to limit leases of s whose deadline has passed, earliest
// first, by the rules of p: a message whose attempt number is its own
// MaxAttempts (store.ExpiredLease.MaxAttempts) or more, or, for a message
// without one, p.MaxAttempts or more, dies; the others are pending again
// after p.Delay(attempt). Their LastError becomes LeaseExpired. A lease claimed
// ahead or held and never confirmed (store.ExpiredLease.Held) cost
// nothing: its message is pending again at once, with the attempt its
// claim counted taken back (RetryParams.Unhanded) and its LastError as it
// was. A Queue reaps
// this way when a lease's deadline passes; Reap is exported for tools and
// tests that work on a store without a queue.
//
// It reads the expired leases (Store.Expired) and ends each with a fenced
// Retry that requires the lease to have expired (RetryParams.Expired): a
// lease that was acked, ended, claimed again or extended since it was read
// is skipped, and counted neither as returned nor as dead. The delays are
// all computed before the first write, so that a Backoff that panics
// fails the Reap, with an error, and changes nothing. The Now, NextDue and
// NextDeadline of the result are read after the writes.
func Reap(ctx context.Context, s Store, limit int, p RetryPolicy) (Reaped, error) {
	e, err := s.Expired(ctx, max(limit, 0))
	if err != nil {
		return Reaped{}, err
	}
	if len(e.Leases) == 0 {
		return Reaped{Now: e.Now, NextDue: e.NextDue, NextDeadline: e.NextDeadline}, nil
	}
	params := make([]store.RetryParams, len(e.Leases))
	for i, l := range e.Leases {
		if l.Held {
			// Claimed ahead or held, never handed out: it goes back at
			// once, its attempt taken back, with no error text.
			params[i] = store.RetryParams{Lease: l.Ref(), Expired: true, Unhanded: true}
			continue
		}
		maxAttempts := p.MaxAttempts
		if l.MaxAttempts > 0 {
			maxAttempts = l.MaxAttempts
		}
		params[i] = store.RetryParams{Lease: l.Ref(), Error: LeaseExpired, Expired: true,
			Dead: l.Attempt >= maxAttempts, Retention: p.Retention}
		if !params[i].Dead {
			if params[i].After, err = p.Delay(l.Attempt); err != nil {
				return Reaped{}, err
			}
		}
	}
	var r Reaped
	for i := range e.Leases {
		err := s.Retry(ctx, params[i])
		switch {
		case errors.Is(err, ErrLeaseLost):
			continue
		case err != nil:
			return r, err
		case params[i].Unhanded:
			r.Released++
		case params[i].Dead:
			r.Dead++
		default:
			r.Returned++
		}
	}
	after, err := s.Expired(ctx, 0)
	if err != nil {
		return r, err
	}
	r.Now, r.NextDue, r.NextDeadline = after.Now, after.NextDue, after.NextDeadline
	return r, nil
}

// A reap is one transaction of at most reapBatch messages, and repeats
// while it finds that many.
const reapBatch = 256

// startReap runs when the reap timer fires: it reaps in a goroutine of
// its own, since a reap is a store call. If a reap is under way, that one
// goes round once more, as leases may have expired since its last pass.
func (q *Queue) startReap() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.reapAt = time.Time{}
	if q.closed {
		return
	}
	if q.reaping {
		q.reapAgain = true
		return
	}
	q.reaping = true
	q.wg.Add(1)
	go q.reapLoop()
}

// reapLoop reaps until no timer fired meanwhile.
func (q *Queue) reapLoop() {
	defer q.wg.Done()
	for {
		err := q.reapExpired(q.ctx)
		q.storeError(OpReap, nil, err)
		q.mu.Lock()
		if err != nil && !q.closed {
			q.log.Warn("durable: reaping expired leases failed; trying again in 1s", "err", err)
			armLocked(q.reap, &q.reapAt, q.clock.Now().Add(time.Second))
		}
		if !q.reapAgain || q.closed {
			q.reaping, q.reapAgain = false, false
			q.mu.Unlock()
			return
		}
		q.reapAgain = false
		q.mu.Unlock()
	}
}

// reapExpired ends the leases whose deadline passed, in batches.
func (q *Queue) reapExpired(ctx context.Context) error {
	p := RetryPolicy{MaxAttempts: q.cfg.maxAttempts, Backoff: q.cfg.backoff, Retention: q.cfg.retention}
	for {
		r, err := Reap(ctx, boundedStore{q.store, q.cfg.callTimeout()}, reapBatch, p)
		if err != nil {
			return err
		}
		if r.Returned > 0 {
			q.observe(Event{Kind: EventRetried, N: r.Returned})
		}
		if r.Dead > 0 {
			q.log.Info("durable: messages died after their last lease expired", "count", r.Dead)
			q.observe(Event{Kind: EventDead, N: r.Dead})
		}
		q.schedule(r.Now, r.NextDue, r.NextDeadline, 0)
		if r.Returned+r.Dead+r.Released < reapBatch || r.NextDeadline.IsZero() || r.NextDeadline.After(r.Now) {
			return nil
		}
	}
}

// Reaped is what Reap returns.
type Reaped struct {
	// Returned counts the messages made pending again and Dead those that
	// died, after a hand-out whose lease expired; Released counts those
	// whose lease was claimed ahead or held and never handed out
	// (store.ExpiredLease.Held): pending again at once, their attempt
	// taken back, with no error text.
	Returned, Dead, Released int
	// Now, NextDue and NextDeadline are as in store.Claimed, after the
	// reap.
	Now, NextDue, NextDeadline time.Time
}

// RetryPolicy is how Reap treats a message whose lease expired: the
// queue's rules of death, back-off and retention.
type RetryPolicy struct {
	// MaxAttempts is the number of attempts after which a message dies,
	// if it has no MaxAttempts of its own.
	MaxAttempts int
	// Backoff returns the delay before the next attempt of a message whose
	// attempt number attempt (1 or more) failed.
	Backoff func(attempt int) time.Duration
	// Retention bounds the dead letters kept when a message dies (see
	// WithDeadLetterRetention); the zero Retention keeps them all.
	Retention store.Retention
}

// Delay is the back-off of a message whose attempt number attempt (1 or
// more) failed: p.Backoff(attempt), or 0 if p.Backoff is nil. A panic in
// Backoff, which is the user's code, comes back as an error, so that it
// fails the Reap that called it and not the store. Reap calls it for each
// message it makes pending again, and not for one that dies.
func (p RetryPolicy) Delay(attempt int) (d time.Duration, err error) {
	if p.Backoff == nil {
		return 0, nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("durable: the back-off function panicked for attempt %d: %v", attempt, r)
		}
	}()
	return p.Backoff(attempt), nil
}

// boundedStore bounds each Expired and Retry call of a reap by d (see
// WithStoreTimeout).
type boundedStore struct {
	store.Store
	d time.Duration
}

func (b boundedStore) Expired(ctx context.Context, limit int) (store.ExpiredLeases, error) {
	ctx, cancel := context.WithTimeout(ctx, b.d)
	defer cancel()
	return b.Store.Expired(ctx, limit)
}

func (b boundedStore) Retry(ctx context.Context, p store.RetryParams) error {
	ctx, cancel := context.WithTimeout(ctx, b.d)
	defer cancel()
	return b.Store.Retry(ctx, p)
}
