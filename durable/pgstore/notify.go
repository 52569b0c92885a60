package pgstore

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

const (
	// waitTimeout is how long the listening connection may stay silent
	// before the notifier pings it, to find a connection that died
	// without closing.
	waitTimeout = time.Minute
	// pingTimeout bounds that ping, and closeTimeout the closing of a
	// listening connection.
	pingTimeout  = 10 * time.Second
	closeTimeout = time.Second
	// Bounds of the pause after a failure of the listening connection,
	// doubling between them.
	minPause = 100 * time.Millisecond
	maxPause = 5 * time.Second
	// recheckDelay is how long after a claim that leased messages the
	// notifier wakes its subscribers anyway (see recheck).
	recheckDelay = time.Second
)

// A notifier feeds the channels of Wakeups from the notifications of the
// queue's channel, received on one listening connection, from a safety
// poll at random intervals, and from the rechecks after claims. Its
// goroutines start with the first subscriber, so that a store that only
// enqueues holds no connection, and stop with the last one, or Close.
type notifier struct {
	s      *Store
	mu     sync.Mutex
	subs   []chan struct{}
	closed bool
	run    *listening // the goroutines, while there are subscribers

	// received counts the notifications received, and listening the
	// connections listening (0 or 1), for the tests.
	received  atomic.Int64
	listening atomic.Int64
}

// listening is one run of the notifier's goroutines.
type listening struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	recheck chan struct{}
}

func (n *notifier) init(s *Store) { n.s = s }

// Wakeups implements store.Notifier. Each call returns a new channel,
// with a buffer of one: a wake-up is dropped, never waited for, when the
// channel already holds one. The channel receives when a store of the
// queue, in this process or another, commits a message earlier than every
// other pending one (an Enqueue, EnqueueTx, Retry or Requeue;
// see the package documentation), whenever the listening connection
// starts listening (again, after a failure), a second after a Claim of
// this store that leased messages, and from the safety poll
// (WithSafetyPoll). After stop, or Close, it receives nothing more. The
// first call opens the listening connection, and the stop of the last
// channel closes it.
func (s *Store) Wakeups() (<-chan struct{}, func()) {
	n := &s.wake
	ch := make(chan struct{}, 1)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return ch, func() {}
	}
	n.subs = append(n.subs, ch)
	if n.run == nil {
		n.run = n.start()
	}
	var once sync.Once
	return ch, func() { once.Do(func() { n.unsubscribe(ch) }) }
}

// unsubscribe forgets the channel ch of Wakeups, and stops the goroutines
// if it was the last.
func (n *notifier) unsubscribe(ch chan struct{}) {
	n.mu.Lock()
	if i := slices.Index(n.subs, ch); i >= 0 {
		n.subs = slices.Delete(n.subs, i, i+1)
	}
	var run *listening
	if len(n.subs) == 0 {
		run, n.run = n.run, nil
	}
	n.mu.Unlock()
	run.stop()
}

// close stops the goroutines for good (Store.Close).
func (n *notifier) close() {
	n.mu.Lock()
	n.closed = true
	n.subs = nil
	run := n.run
	n.run = nil
	n.mu.Unlock()
	run.stop()
}

// subscribers counts the channels of Wakeups, for the tests.
func (n *notifier) subscribers() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.subs)
}

// start starts the goroutines; n.mu is held.
func (n *notifier) start() *listening {
	ctx, cancel := context.WithCancel(context.Background())
	r := &listening{cancel: cancel, recheck: make(chan struct{}, 1)}
	r.wg.Go(func() { n.listen(ctx) })
	r.wg.Go(func() { n.poll(ctx, r.recheck) })
	return r
}

// stop ends the goroutines of r, if not nil, and waits for them.
func (r *listening) stop() {
	if r == nil {
		return
	}
	r.cancel()
	r.wg.Wait()
}

// notify sends on every channel of Wakeups that is not full.
func (n *notifier) notify() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, ch := range n.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// recheck asks for a wake-up between one and two recheckDelay from now
// (at most one a recheckDelay, however many claims ask). A Claim that leased messages calls it: a writer that committed
// just after the claim read the table may have decided not to notify,
// having seen as earlier than its own a message this claim then took,
// while this claim did not see the writer's message, and so did not count
// it in its NextDue. The claim after the wake-up does.
func (n *notifier) recheck() {
	n.mu.Lock()
	run := n.run
	n.mu.Unlock()
	if run != nil {
		select {
		case run.recheck <- struct{}{}:
		default:
		}
	}
}

// poll wakes at random intervals between half the safety poll and all of
// it, and between one and two recheckDelay after each recheck, until ctx
// ends.
func (n *notifier) poll(ctx context.Context, recheck <-chan struct{}) {
	d := n.s.opts.safetyPoll
	var (
		safety *time.Timer
		again  *time.Timer
		// safetyC and againC are the channels of the armed timers, nil
		// when not armed.
		safetyC, againC <-chan time.Time
		// more is set by a recheck asked for while the timer was armed.
		more bool
	)
	if d > 0 {
		safety = time.NewTimer(jitter(d))
		defer safety.Stop()
		safetyC = safety.C
	}
	defer func() {
		if again != nil {
			again.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-safetyC:
			n.notify()
			safety.Reset(jitter(d))
		case <-recheck:
			if againC != nil {
				// Armed for an earlier claim: once it fires, arm
				// again for this one, so that every claim is followed
				// by a wake-up between one and two recheckDelay later.
				more = true
				continue
			}
			if again == nil {
				again = time.NewTimer(recheckDelay)
			} else {
				again.Reset(recheckDelay)
			}
			againC = again.C
		case <-againC:
			againC = nil
			n.notify()
			if more {
				more = false
				again.Reset(recheckDelay)
				againC = again.C
			}
		}
	}
}

// jitter returns a random duration between d/2 and d.
func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1)
}

// listen keeps a connection listening on the queue's channel until ctx
// ends, waking the subscribers on every notification, and whenever it
// starts listening, since notifications may have been lost before. After
// a failure it opens a new connection, after a pause that doubles from
// minPause to maxPause while the failures go on.
func (n *notifier) listen(ctx context.Context) {
	var (
		pause   time.Duration
		failing bool
	)
	for {
		err := n.session(ctx, func() {
			pause = 0
			if failing {
				n.s.opts.logger.Info("pgstore: listening again", "queue", n.s.queue)
				failing = false
			}
		})
		if ctx.Err() != nil {
			return
		}
		if !failing {
			n.s.opts.logger.Warn("pgstore: the listening connection failed; retrying", "queue", n.s.queue, "err", err)
			failing = true
		}
		pause = min(max(2*pause, minPause), maxPause)
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
	}
}

// session opens a connection, listens on it, calls up, and waits for
// notifications until the connection fails or ctx ends. It returns why.
func (n *notifier) session(ctx context.Context, up func()) error {
	conn, err := n.connect(ctx)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{n.s.channel}.Sanitize()); err != nil {
		return err
	}
	n.listening.Add(1)
	defer n.listening.Add(-1)
	up()
	n.notify()
	for {
		wctx, cancel := context.WithTimeout(ctx, waitTimeout)
		_, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			n.received.Add(1)
			n.notify()
			continue
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, context.DeadlineExceeded) && !conn.IsClosed():
			// Silence: check the connection is alive.
			pctx, cancel := context.WithTimeout(ctx, pingTimeout)
			err = conn.Ping(pctx)
			cancel()
			if err == nil {
				continue
			}
		}
		return err
	}
}

// connect opens the listening connection: with the configuration of
// WithListenerConfig, or taken from the pool for good (Hijack), so that it
// goes back to no one with its LISTEN.
func (n *notifier) connect(ctx context.Context) (*pgx.Conn, error) {
	if cfg := n.s.opts.listener; cfg != nil {
		return pgx.ConnectConfig(ctx, cfg.Copy())
	}
	c, err := n.s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return c.Hijack(), nil
}
