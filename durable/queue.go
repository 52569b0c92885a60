package durable

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/seed64e23a5c/timingwheel"
)

// Queue is a durable delay queue over a Store. Create one with Open (the
// embedded file) or New; all methods are safe for concurrent use.
type Queue struct {
	store     Store
	ownsStore bool
	cfg       config
	clock     clock.Clock
	wheel     *timingwheel.TimingWheel
	ownsWheel bool
	log       *slog.Logger
	// storeClock is set if the store measures time on the queue's clock
	// (see local).
	storeClock bool

	mu     sync.Mutex
	closed bool
	// waiters are the receivers waiting for a wake-up, and woken is set
	// by a wake-up that none was waiting for (see wakeup.go).
	waiters []chan struct{}
	woken   bool
	// claiming counts the receivers whose claim is under way.
	claiming int
	// due fires at the earliest due time the queue knows of, dueAt, and
	// reap at the earliest lease deadline, reapAt (zero when not armed).
	due, reap     *timingwheel.Timer
	dueAt, reapAt time.Time
	reaping       bool                 // a reap goroutine runs
	reapAgain     bool                 // the reap timer fired while it ran
	waiting       int                  // receivers waiting, for tests
	ahead         map[string]*Delivery // claimed ahead, not handed out yet (see handOut)

	ctx    context.Context // ends on Close, for the queue's own store calls
	cancel context.CancelFunc
	done   <-chan struct{} // ctx.Done()
	active sync.WaitGroup  // store calls under way (see enter)
	wg     sync.WaitGroup  // the goroutines of reaps and notifications
}

// Reap and claim sizes: a reap is one transaction of at most reapBatch
// messages, and repeats while it finds that many.
const reapBatch = 256

// New returns a queue over s, configured by opts. It reaps the leases
// that expired while no queue ran (say, after a crash), and arms its
// timers for the earliest due message and lease. Close the queue when
// done; it does not close s.
func New(s Store, opts ...Option) (*Queue, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	return newQueue(s, cfg, false)
}

// Open opens the queue kept in the file at path, creating the file if
// needed (see BoltStore). Close the queue to release the file.
func Open(path string, opts ...Option) (*Queue, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s, err := openBoltStore(path, &cfg)
	if err != nil {
		return nil, err
	}
	q, err := newQueue(s, cfg, true)
	if err != nil {
		_ = s.Close()
		return nil, err
	}
	return q, nil
}

func (c *config) validate() error {
	switch {
	case c.visibility <= 0:
		return fmt.Errorf("durable: visibility timeout must be positive, got %v", c.visibility)
	case c.maxAttempts < 1:
		return fmt.Errorf("durable: max attempts must be at least 1, got %d", c.maxAttempts)
	case c.backoff == nil:
		return errors.New("durable: nil back-off function")
	}
	return c.retention.Validate()
}

func newQueue(s Store, cfg config, ownsStore bool) (*Queue, error) {
	if s == nil {
		return nil, errors.New("durable: nil store")
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	q := &Queue{
		store: s, ownsStore: ownsStore, cfg: cfg, clock: cfg.clock, wheel: cfg.wheel,
		log: cfg.logger, ahead: make(map[string]*Delivery),
	}
	q.ctx, q.cancel = context.WithCancel(context.Background())
	q.done = q.ctx.Done()
	if q.clock == nil {
		q.clock = clock.New()
	}
	q.storeClock = onStoreClock(s, q.clock)
	if q.log == nil {
		q.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if q.wheel == nil {
		w, err := timingwheel.New(timingwheel.WithClock(q.clock),
			timingwheel.WithExecutor(func(task func()) { task() }))
		if err != nil {
			return nil, err
		}
		w.Start()
		q.wheel, q.ownsWheel = w, true
	}
	// Both timers start stopped; arm resets them.
	q.due = q.wheel.AfterFunc(math.MaxInt64, q.wake)
	q.due.Stop()
	q.reap = q.wheel.AfterFunc(math.MaxInt64, q.startReap)
	q.reap.Stop()
	// Leases left by a previous run, and the first due time.
	if err := q.reapExpired(q.ctx); err != nil {
		q.shutdown()
		return nil, err
	}
	if n, ok := s.(Notifier); ok {
		q.wg.Add(1)
		go q.listen(n)
	}
	return q, nil
}

// Enqueue writes m, replacing the message with the same ID if there is
// one (whatever its state: a delivery of the old one loses its lease).
// Once it returns nil, m is in the store (on disk for Open with
// SyncAlways). A message breaking a limit gets an error wrapping
// ErrInvalidMessage, and nothing is written.
func (q *Queue) Enqueue(ctx context.Context, m Message) error {
	if err := m.Validate(); err != nil {
		return err
	}
	held := q.heldAhead(m.ID)
	err := q.call(func() error { return q.store.Enqueue(ctx, []Message{m}) })
	if err != nil {
		return err
	}
	// A receiver of this process that held the old version since before
	// the write stops waiting for it: the store took it back, and its
	// Confirm would fail. One that claimed since holds the new version.
	q.revokeIfHeld(m.ID, held)
	q.wakeAt(m.Due)
	q.observe(Event{Kind: EventEnqueued, ID: m.ID})
	return nil
}

// Cancel deletes the message id if it is pending or dead, or claimed
// ahead by a receiver, in any process, that has not handed it out yet
// (see Receive; and Run, which holds messages for busy workers the same
// way): that receiver then claims another. It reports whether
// there was one. It returns ErrInFlight, and deletes nothing, once the
// message has been handed out to a consumer: ack it, or let its lease
// expire, instead. Once Cancel returns true, no receiver hands the
// message out.
func (q *Queue) Cancel(ctx context.Context, id string) (bool, error) {
	held := q.heldAhead(id)
	var found bool
	err := q.call(func() (err error) {
		found, err = q.store.Cancel(ctx, id)
		return err
	})
	if found {
		q.revokeIfHeld(id, held)
	}
	return found, err
}

// claimAhead is how early Receive claims a message: a write to the
// store, with its fsync, takes from a fraction of a millisecond to tens of
// them on a busy disk, and claiming ahead keeps that out of the lateness.
// The message is handed out at its due time, never before; the price is
// that a process that dies in the meantime has used one of the message's
// attempts without delivering it.
const claimAhead = 50 * time.Millisecond // the default of config.claimAhead

// Receive waits until a message is due, leases it for the visibility
// timeout and returns it. Ack the delivery once it is handled, or Retry it.
//
// Receive returns ctx.Err() when ctx ends and ErrClosed when the queue is
// closed. A store error, such as a server that is down, does not end it:
// it logs the error and tries again with a back-off (from 10ms to 1s), and
// mentions the last error if ctx then ends. ErrCorrupt ends it.
//
// Receive claims a message up to 50ms before its due time and holds it
// until then (see claimAhead). Once it holds one it returns it at its due
// time even if ctx ends meanwhile, so that no lease is left unused: it
// may thus return up to 50ms after ctx ends. If the queue is closed
// meanwhile, the message goes back to the store, due as before. At the
// due time it confirms the lease with the store (Store.Confirm): if an
// Enqueue or Cancel of the message, in any process, came first, it does
// not return the message and claims another. If the confirmation fails
// otherwise (the store is down), it does not return the message either,
// which comes back when its lease expires.
func (q *Queue) Receive(ctx context.Context) (*Delivery, error) {
	for {
		ds, err := q.claimDue(ctx, func() (int, int) { return 1, 0 })
		if err != nil {
			return nil, err
		}
		d, err := q.deliver(ds[0])
		if errors.Is(err, errRevoked) {
			continue
		}
		return d, err
	}
}

// claimDue waits until messages are due and claims up to n of them, of
// which held are claimed held (see Store.Claim), where n, held = want()
// (asked before each claim; n is 1 or more), earliest first. It
// returns at least one, each to be handed out with deliver. Once the store
// leased them it returns them even if ctx ended meanwhile: a lease taken
// is handed out. Its errors are Receive's.
func (q *Queue) claimDue(ctx context.Context, want func() (n, held int)) ([]*Delivery, error) {
	var lastErr error
	for failures := 0; ; {
		if err := q.enterClaim(); err != nil {
			return nil, err
		}
		n, held := want()
		c, err := q.store.Claim(ctx, ClaimParams{Limit: n, Held: held, Lease: q.cfg.visibility, Ahead: q.cfg.claimAhead})
		q.claimDone()
		if err == nil {
			failures, lastErr = 0, nil
			q.schedule(c.Now, c.NextDue, c.NextDeadline, c.DueSoon)
			if len(c.Leases) > 0 {
				ds := make([]*Delivery, len(c.Leases))
				for i, l := range c.Leases {
					ds[i] = q.delivery(c.Now, l)
				}
				return ds, nil
			}
			if err := q.await(ctx); err != nil {
				return nil, err
			}
			continue
		}
		switch {
		case ctx.Err() != nil:
			return nil, ctxError(ctx, lastErr)
		case errors.Is(err, ErrClosed), errors.Is(err, ErrCorrupt):
			return nil, err
		}
		failures++
		lastErr = err
		delay := retryDelay(failures)
		q.log.Warn("durable: claim failed; receiving again later", "err", err, "attempt", failures, "after", delay)
		if err := q.sleep(ctx, delay); err != nil {
			return nil, ctxError(ctx, lastErr)
		}
	}
}

// deliver hands d out (see handOut) and reports the delivery to the
// observer.
func (q *Queue) deliver(d *Delivery) (*Delivery, error) {
	d, err := q.handOut(d)
	if err == nil {
		q.observe(Event{Kind: EventDelivered, ID: d.ID, Attempt: d.Attempt, Lateness: q.clock.Since(d.Due)})
	}
	return d, err
}

// errRevoked is handOut's error for a message replaced or cancelled while
// it was held: Receive claims another.
var errRevoked = errors.New("durable: held message replaced or cancelled")

// handOut returns d at its due time, d.dueAt on the queue's clock. While
// it waits, d is in q.ahead: an Enqueue or Cancel of its ID in this
// process revokes it, and Close gives it back to the store. A message
// claimed ahead or held is then confirmed with the store (Store.Confirm),
// which fails if an Enqueue or Cancel of any process took it back
// meanwhile.
func (q *Queue) handOut(d *Delivery) (*Delivery, error) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		q.release(d)
		return nil, ErrClosed
	}
	if d.dueAt.After(q.clock.Now()) {
		q.ahead[d.ID] = d
		q.waiting++
		q.mu.Unlock()

		ready := make(chan struct{})
		t := q.wheel.AfterFuncAt(d.dueAt, func() { close(ready) })
		select {
		case <-ready:
		case <-q.done:
		}
		t.Stop()

		q.mu.Lock()
		q.waiting--
		if q.ahead[d.ID] == d {
			delete(q.ahead, d.ID)
		}
		switch {
		case d.revoked:
			q.mu.Unlock()
			return nil, errRevoked
		case q.closed: // Close released it
			q.mu.Unlock()
			return nil, ErrClosed
		}
	}
	if !d.ahead {
		q.mu.Unlock()
		return d, nil
	}
	q.active.Add(1) // Close waits for the confirmation
	q.mu.Unlock()
	err := q.store.Confirm(context.Background(), d.ID, d.token)
	q.active.Done()
	switch {
	case err == nil:
		return d, nil
	case !errors.Is(err, ErrLeaseLost):
		// Whether it was taken back is unknown: it is not handed out,
		// and comes back when its lease expires.
		q.log.Warn("durable: confirming a message claimed ahead failed; it comes back when its lease expires",
			"id", d.ID, "err", err)
	}
	return nil, errRevoked
}

// heldAhead returns the delivery of id this process holds ahead, if any.
func (q *Queue) heldAhead(id string) *Delivery {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ahead[id]
}

// revokeIfHeld takes held, the delivery of id held before a write that
// took it back in the store, from the Receive that holds it, if it still
// does. A delivery claimed after the write is left alone: it is the new
// version.
func (q *Queue) revokeIfHeld(id string, held *Delivery) {
	if held == nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.ahead[id] == held {
		held.revoked = true
		delete(q.ahead, id)
	}
}

// release gives back to the store a message claimed ahead and not handed
// out, pending at its due time again (Store.Release). Its attempt stays
// counted: a store has no way to take one back.
func (q *Queue) release(d *Delivery) {
	after := max(d.dueAt.Sub(q.clock.Now()), 0)
	if err := q.store.Release(context.Background(), d.ID, d.token, after); err != nil &&
		!errors.Is(err, ErrLeaseLost) {
		q.log.Warn("durable: giving back a message claimed ahead failed; its lease will expire", "id", d.ID, "err", err)
	}
}

func ctxError(ctx context.Context, last error) error {
	if last == nil {
		return ctx.Err()
	}
	return fmt.Errorf("%w (last store error: %v)", ctx.Err(), last)
}

// retryDelay is the wait after the nth store failure in a row: doubling
// from 10ms up to 1s, with equal jitter so that receivers spread out.
func retryDelay(n int) time.Duration {
	d := time.Second
	if n < 8 {
		d = min(10*time.Millisecond<<(n-1), time.Second)
	}
	return d/2 + rand.N(d/2+1)
}

// sleep waits d on the queue's clock, unless ctx ends or the queue closes.
func (q *Queue) sleep(ctx context.Context, d time.Duration) error {
	t := q.wheel.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-q.done:
		return ErrClosed
	}
}

// DeadLetters returns up to limit dead messages, in the order they died;
// the Due of each is when it died. List(ctx, Dead, cursor, limit) pages
// through the same, with DiedAt, Attempt, LastError and EnqueuedAt.
//
// Deprecated: use List with Dead, whose Info gives each time a field of
// its own (DiedAt) rather than reusing Message.Due.
func (q *Queue) DeadLetters(ctx context.Context, limit int) ([]Message, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("durable: DeadLetters limit must be positive, got %d", limit)
	}
	var dead []Message
	err := q.call(func() (err error) {
		dead, err = q.store.DeadLetters(ctx, limit)
		return err
	})
	return dead, err
}

// Requeue brings the dead message id back, pending and due at due (now
// if zero), with its attempts counted from zero again. It returns
// ErrNotFound if there is no dead message id.
func (q *Queue) Requeue(ctx context.Context, id string, due time.Time) error {
	if err := q.call(func() error { return q.store.Requeue(ctx, id, due) }); err != nil {
		return err
	}
	q.wakeAt(due)
	return nil
}

// Stats counts the messages in the store.
func (q *Queue) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	err := q.call(func() (err error) {
		st, err = q.store.Stats(ctx)
		return err
	})
	return st, err
}

// Close stops the queue: waiting receivers return ErrClosed, and so do
// later calls. Messages stay in the store, deliveries under way included
// (their leases expire as usual unless acked before Close). Close closes
// the store if the queue opened it (Open), and not if it was given one
// (New). It waits for the queue's goroutines and is idempotent.
func (q *Queue) Close() error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil
	}
	q.shutdownLocked()
	held := make([]*Delivery, 0, len(q.ahead))
	for _, d := range q.ahead {
		held = append(held, d)
	}
	q.mu.Unlock()
	for _, d := range held {
		q.release(d)
	}
	return q.finish()
}

func (q *Queue) shutdown() {
	q.mu.Lock()
	q.shutdownLocked()
	q.mu.Unlock()
	_ = q.finish()
}

func (q *Queue) shutdownLocked() {
	q.closed = true
	q.cancel()
	q.due.Stop()
	q.reap.Stop()
}

func (q *Queue) finish() error {
	q.active.Wait()
	q.wg.Wait()
	if q.ownsWheel {
		q.wheel.Stop()
	}
	if q.ownsStore {
		return q.store.Close()
	}
	return nil
}

// enter starts a store call of the queue's, unless the queue is closed:
// Close waits for the calls under way, so that none writes after it. The
// caller calls q.active.Done() when the store call returns.
func (q *Queue) enter() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	q.active.Add(1)
	return nil
}

// call runs f as a store call of the queue's (see enter).
func (q *Queue) call(f func() error) error {
	if err := q.enter(); err != nil {
		return err
	}
	defer q.active.Done()
	return f()
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
	if !nextDue.IsZero() {
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
	p := RetryPolicy{MaxAttempts: q.cfg.maxAttempts, Backoff: q.cfg.backoff}
	for {
		r, err := Reap(ctx, q.store, reapBatch, p)
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
		if r.Returned+r.Dead < reapBatch || r.NextDeadline.IsZero() || r.NextDeadline.After(r.Now) {
			return nil
		}
	}
}

// listen wakes a receiver on each notification of a shared store, and
// gives the store's channel back on Close.
func (q *Queue) listen(n Notifier) {
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
