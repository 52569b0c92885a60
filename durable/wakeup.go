package durable

import (
	"context"
	"slices"
)

// Wake-ups. A receiver that finds nothing to claim waits in q.waiters
// until a wake-up says a message may be due: the due timer, an Enqueue
// (or Retry, Requeue) of this process, a notification of a shared store,
// or a claim that found more due messages than it took. Each wake-up
// wakes one receiver, which claims; if its claim reports more due, it
// wakes as many more as its claim counts due messages left (Claimed.
// DueSoon), less the receivers claiming already (see schedule). So a
// burst of k messages costs about k claims, whatever the number of
// receivers waiting, and they claim together, which lets the embedded
// store commit their claims with one fsync. A wake-up that comes
// while no receiver waits is kept (q.woken) for the next to claim, so
// none is lost between a claim that found nothing and the wait after it.

// enterClaim starts a Receive's claim (see enter): that claim serves a
// wake-up kept for whoever claims next.
func (q *Queue) enterClaim() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	q.woken = false
	q.claiming++
	q.active.Add(1)
	return nil
}

// claimDone ends a Receive's claim.
func (q *Queue) claimDone() {
	q.mu.Lock()
	q.claiming--
	q.mu.Unlock()
	q.active.Done()
}

// wakeOneLocked wakes the receiver that has waited longest, or keeps the
// wake-up for the next claim if none waits.
func (q *Queue) wakeOneLocked() {
	if len(q.waiters) == 0 {
		q.woken = true
		return
	}
	ch := q.waiters[0]
	q.waiters = slices.Delete(q.waiters, 0, 1)
	ch <- struct{}{}
}

// await waits for a wake-up, the end of ctx or Close. A wake-up kept
// since the caller's claim began returns at once.
func (q *Queue) await(ctx context.Context) error {
	q.mu.Lock()
	if q.woken {
		q.woken = false
		q.mu.Unlock()
		return nil
	}
	ch := make(chan struct{}, 1)
	q.waiters = append(q.waiters, ch)
	q.waiting++
	q.mu.Unlock()
	var err error
	select {
	case <-ch:
	case <-ctx.Done():
		err = ctx.Err()
	case <-q.done:
		err = ErrClosed
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.waiting--
	if err == nil {
		return nil
	}
	if i := slices.Index(q.waiters, ch); i >= 0 {
		q.waiters = slices.Delete(q.waiters, i, i+1)
	} else if !q.closed {
		// Woken as it gave up: the wake-up goes to another receiver.
		q.wakeOneLocked()
	}
	return err
}
