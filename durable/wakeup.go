package durable

import (
	"context"
	"slices"
	"time"

	"github.com/seed64e23a5c/timingwheel"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// The queue's timers and wake-ups: the receivers waiting for a message,
// the due timer, the notifications of a shared store, and the arming of
// the due and reap timers from what the store reports.

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

// wakeAt makes sure receivers try to claim at due, a time on the queue's
// clock; a zero due means now.
func (q *Queue) wakeAt(due time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	now := q.clock.Now()
	wait := due.Sub(now) - q.cfg.claimAhead
	if due.IsZero() || wait <= 0 {
		q.wakeOneLocked()
		return
	}
	// now plus a duration: for the real clock, a monotonic reading, which
	// a due time read from the store or built by the caller may lack.
	armLocked(q.due, &q.dueAt, now.Add(wait))
}

// armLocked arms t for at unless it is armed for an earlier time already.
// Firing earlier than needed costs one claim that finds nothing and tells
// the next time.
func armLocked(t *timingwheel.Timer, armedAt *time.Time, at time.Time) {
	if !armedAt.IsZero() && !at.Before(*armedAt) {
		return
	}
	*armedAt = at
	t.ResetAt(at)
}

// schedule arms the timers from what a store reported, translating its
// instants (on its clock, whose now was storeNow) to the queue's clock.
// If messages are due already (dueSoon of them, as a claim counts), it
// wakes as many receivers, less those claiming already.
func (q *Queue) schedule(storeNow, nextDue, nextDeadline time.Time, dueSoon int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	now := q.clock.Now()
	if !nextDue.IsZero() && !q.paused {
		if wait := q.local(now, storeNow, nextDue).Sub(now) - q.cfg.claimAhead; wait <= 0 {
			for range max(dueSoon, 1) - q.claiming {
				q.wakeOneLocked()
			}
		} else {
			armLocked(q.due, &q.dueAt, now.Add(wait))
		}
	}
	if !nextDeadline.IsZero() {
		at := q.local(now, storeNow, nextDeadline)
		if at.Before(now) {
			at = now
		}
		armLocked(q.reap, &q.reapAt, at)
	}
}

// setPaused records whether the last claim found the queue paused (see
// Queue.paused).
func (q *Queue) setPaused(paused bool) {
	q.mu.Lock()
	q.paused = paused
	q.mu.Unlock()
}

// wake runs when the due timer fires. The timer is no longer armed, so
// dueAt is cleared whatever the clock says: arm only ever moves it
// earlier, and never to a past instant, so it cannot have been re-armed
// since it fired.
func (q *Queue) wake() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.dueAt = time.Time{}
	if !q.closed {
		q.wakeOneLocked()
	}
}

// listen wakes a receiver on each notification of a shared store, and
// gives the store's channel back on Close.
func (q *Queue) listen(n store.Notifier) {
	defer q.wg.Done()
	wakeups, stop := n.Wakeups()
	defer stop()
	for {
		select {
		case <-wakeups:
			q.mu.Lock()
			if !q.closed {
				q.wakeOneLocked()
			}
			q.mu.Unlock()
		case <-q.done:
			return
		}
	}
}
