package durable

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/seed64e23a5c/timingwheel"
	"github.com/seed64e23a5c/timingwheel/durable/boltstore"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// Queue is a durable delay queue over a Store. Create one with Open (the
// embedded file) or New; all methods are safe for concurrent use.
type Queue struct {
	store     Store
	pauser    store.Pauser       // the store's, or nil (see Pause)
	keeper    store.SeriesKeeper // the store's, or nil (see Schedule)
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
	// paused is set by a claim that found the queue paused, and cleared
	// by one that did not, or by a Resume: while it is set, the queue
	// waits for wake-ups rather than for the next due time.
	paused bool
	// due fires at the earliest due time the queue knows of, dueAt, and
	// reap at the earliest lease deadline, reapAt (zero when not armed).
	due, reap     *timingwheel.Timer
	dueAt, reapAt time.Time
	reaping       bool                  // a reap goroutine runs
	reapAgain     bool                  // the reap timer fired while it ran
	waiting       int                   // receivers waiting, for tests
	ahead         map[string]*Delivery  // claimed ahead, not handed out yet (see handOut)
	series        map[string]*seriesRun // the series this queue takes part in (see schedule.go)

	ctx    context.Context // ends on Close, for the queue's own store calls
	cancel context.CancelFunc
	done   <-chan struct{} // ctx.Done()
	active sync.WaitGroup  // store calls under way (see enter)
	wg     sync.WaitGroup  // the goroutines of reaps and notifications
}

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
// needed: the embedded store of package durable/boltstore, whose
// options (WithSync, WithLockTimeout, and WithClock) it takes with the
// queue's. Close the queue to release the file.
func Open(path string, opts ...Option) (*Queue, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s, err := boltstore.Open(path, cfg.fileOptions()...)
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

func newQueue(s Store, cfg config, ownsStore bool) (*Queue, error) {
	if s == nil {
		return nil, errors.New("durable: nil store")
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	q := &Queue{
		store: s, ownsStore: ownsStore, cfg: cfg, clock: cfg.clock, wheel: cfg.wheel,
		log: cfg.logger, ahead: make(map[string]*Delivery), series: make(map[string]*seriesRun),
	}
	q.pauser, _ = s.(store.Pauser)
	q.keeper, _ = s.(store.SeriesKeeper)
	q.ctx, q.cancel = context.WithCancel(context.Background())
	q.done = q.ctx.Done()
	if q.clock == nil {
		q.clock = clock.New()
	}
	q.storeClock = onStoreClock(s, q.clock)
	if q.log == nil {
		q.log = slog.Default()
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
	if n, ok := s.(store.Notifier); ok {
		q.wg.Add(1)
		go q.listen(n)
	}
	localQueues.add(q)
	return q, nil
}

// Enqueue writes msgs (one or more) as pending messages; all or none is
// written (per shard on a sharded store). An ID held already is replaced,
// whatever its state: a delivery of the old message loses its lease. Once
// it returns nil, the messages are in the store (on disk for Open with
// SyncAlways), and receivers waiting in this process and in others wake
// for them as for one message. An empty call is a no-op. A batch with a
// message breaking a limit, or with two messages of one ID, gets an error
// wrapping ErrInvalidMessage, and nothing is written.
//
// Errors: nil means written. ErrInvalidMessage and ErrClosed (and a ctx
// that ended before the call) mean nothing was written. Any other error
// (a timeout, a connection lost, io.ErrUnexpectedEOF) means the batch may
// or may not have been written, whole (never part of it). Retrying on any
// error is safe: an Enqueue upserts by ID, so writing the same messages
// again replaces them with themselves and never makes a duplicate; it
// only restarts their attempt count and, if one was already delivered
// meanwhile, delivers it again (as at least once allows).
func (q *Queue) Enqueue(ctx context.Context, msgs ...Message) error {
	if len(msgs) == 0 {
		return nil
	}
	if err := store.ValidateBatch(msgs); err != nil {
		return err
	}
	held := q.heldAhead(msgs)
	err := q.call(func() error { return q.store.Enqueue(ctx, msgs) })
	if err != nil {
		return err
	}
	// A receiver of this process that held an old version since before
	// the write stops waiting for it: the store took it back, and its
	// Confirm would fail. One that claimed since holds the new version.
	q.revokeIfHeld(held)
	earliest := msgs[0].Due
	for i := range msgs {
		if msgs[i].Due.Before(earliest) {
			earliest = msgs[i].Due
		}
	}
	q.wakeAt(earliest)
	for i := range msgs {
		q.observe(Event{Kind: EventEnqueued, ID: msgs[i].ID, MessageKind: msgs[i].Kind})
	}
	return nil
}

// Cancel deletes the message id if it is pending or dead, or claimed
// ahead of its due time by a receiver, in any process, that has not
// handed it out yet (see Receive; and Run, which holds such messages for
// busy workers the same way): that receiver then claims another. It
// reports whether there was one. It returns ErrInFlight, and deletes
// nothing, once the message has been handed out: to a consumer, or by a
// claim of Run for a busy worker, which hands out the messages already
// due that it claims (see Run). Ack it, or let its lease expire,
// instead. Once Cancel returns true, no receiver hands the
// message out.
//
// Errors: (false, nil) means there was nothing to delete. ErrInFlight and
// ErrClosed mean nothing was deleted. Any other error (a timeout, a
// connection lost) means the message may or may not have been deleted.
// Retrying is safe: a Cancel of a message already deleted returns false,
// so a retry after such an error that returns (false, nil) does not tell
// whether the first call deleted it or it was never there; Get tells
// whether it is still there.
func (q *Queue) Cancel(ctx context.Context, id string) (bool, error) {
	held := q.heldAhead([]Message{{ID: id}})
	var found bool
	err := q.call(func() (err error) {
		found, err = q.store.Cancel(ctx, id)
		return err
	})
	if found {
		q.revokeIfHeld(held)
	}
	return found, err
}

// Requeue brings the dead message id back, pending and due at due (now
// if zero), with its attempts counted from zero again. It returns
// ErrNotFound if there is no dead message id.
func (q *Queue) Requeue(ctx context.Context, id string, due time.Time) error {
	if err := store.CheckTime(due); err != nil {
		return fmt.Errorf("durable: Requeue of %q: %w", id, err)
	}
	if err := q.call(func() error { return q.store.Requeue(ctx, store.RequeueParams{ID: id, Due: due}) }); err != nil {
		return err
	}
	q.wakeAt(due)
	return nil
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
	q.stopSeriesLocked()
}

func (q *Queue) finish() error {
	localQueues.remove(q)
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
