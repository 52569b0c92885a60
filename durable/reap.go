package durable

import (
	"context"
	"errors"
)

// Reap ends up to limit leases of s whose deadline has passed, earliest
// first, by the rules of p: a message whose attempt number is
// p.MaxAttempts or more dies, the others are pending again after
// p.Delay(attempt). Their LastError becomes LeaseExpired. A Queue reaps
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
	params := make([]RetryParams, len(e.Leases))
	for i, l := range e.Leases {
		params[i] = RetryParams{Error: LeaseExpired, Expired: true, Dead: l.Attempt >= p.MaxAttempts}
		if !params[i].Dead {
			if params[i].After, err = p.Delay(l.Attempt); err != nil {
				return Reaped{}, err
			}
		}
	}
	var r Reaped
	for i, l := range e.Leases {
		err := s.Retry(ctx, l.ID, l.Token, params[i])
		switch {
		case errors.Is(err, ErrLeaseLost):
			continue
		case err != nil:
			return r, err
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
