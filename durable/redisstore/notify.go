package redisstore

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// pingInterval is how long a pub/sub connection may stay silent
	// before the notifier pings it, to find a connection that died
	// without closing.
	pingInterval = 30 * time.Second
	// Bounds of the pause after a pub/sub error, doubling between them.
	minPause = 100 * time.Millisecond
	maxPause = 5 * time.Second
)

// A notifier feeds the channels of Wakeups: from the pub/sub channels of
// the queue's shards, on which the scripts publish when they make a
// message the earliest pending one, and from a safety poll at random
// intervals. Its goroutines start with the first call of Wakeups, so that
// a store that only enqueues holds no pub/sub connection, and stop on
// Close.
type notifier struct {
	s       *Store
	mu      sync.Mutex
	subs    []chan struct{}
	started bool
	stopped bool
	cancel  context.CancelFunc
	pubsubs []*redis.PubSub
	wg      sync.WaitGroup
}

func (n *notifier) init(s *Store) { n.s = s }

// Wakeups implements durable.Notifier. Each call returns a new channel,
// with a buffer of one: a wake-up is dropped, never waited for, when the
// channel already holds one. The channel receives when another store (in
// this process or another) enqueues, retries, requeues or reaps a message
// earlier than every other pending one, when the pub/sub connection comes
// back after a failure, and from the safety poll (WithSafetyPoll). After
// Close it receives nothing more.
func (s *Store) Wakeups() <-chan struct{} {
	n := &s.wake
	ch := make(chan struct{}, 1)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped {
		return ch
	}
	n.subs = append(n.subs, ch)
	if !n.started {
		n.started = true
		n.start()
	}
	return ch
}

// start subscribes and starts the goroutines; n.mu is held.
func (n *notifier) start() {
	s := n.s
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	var groups [][]string
	if s.cluster {
		// A connection subscribes within one node: one per shard.
		for _, sh := range s.shards {
			groups = append(groups, []string{sh.channel()})
		}
	} else {
		var all []string
		for _, sh := range s.shards {
			all = append(all, sh.channel())
		}
		groups = append(groups, all)
	}
	for _, chans := range groups {
		var ps *redis.PubSub
		if s.pub == "SPUBLISH" {
			ps = s.client.SSubscribe(ctx, chans...)
		} else {
			ps = s.client.Subscribe(ctx, chans...)
		}
		n.pubsubs = append(n.pubsubs, ps)
		n.wg.Go(func() { n.listen(ctx, ps) })
	}
	if s.opts.safetyPoll > 0 {
		n.wg.Go(func() { n.poll(ctx) })
	}
}

// stop ends the goroutines and waits for them.
func (n *notifier) stop() {
	n.mu.Lock()
	n.stopped = true
	cancel, pubsubs := n.cancel, n.pubsubs
	n.subs = nil
	n.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	for _, ps := range pubsubs {
		_ = ps.Close()
	}
	n.wg.Wait()
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

// listen receives from ps until ctx ends, waking on every message, and on
// every (re)subscription, after which notifications may have been lost.
func (n *notifier) listen(ctx context.Context, ps *redis.PubSub) {
	var pause time.Duration
	failing := false
	for {
		msg, err := ps.ReceiveTimeout(ctx, pingInterval)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			if isTimeout(err) {
				// Silence: check the connection is alive. A dead one
				// fails the next receive, which reconnects.
				_ = ps.Ping(ctx)
				continue
			}
			if !failing {
				n.s.opts.logger.Warn("redisstore: pub/sub failed; retrying", "queue", n.s.queue, "err", err)
				failing = true
			}
			pause = min(max(2*pause, minPause), maxPause)
			select {
			case <-ctx.Done():
				return
			case <-time.After(pause):
			}
			continue
		}
		pause = 0
		switch msg.(type) {
		case *redis.Subscription:
			if failing {
				n.s.opts.logger.Info("redisstore: pub/sub is back", "queue", n.s.queue)
				failing = false
			}
			n.notify()
		case *redis.Message:
			n.notify()
		}
	}
}

// poll wakes at random intervals between half the safety poll and all of
// it, until ctx ends.
func (n *notifier) poll(ctx context.Context) {
	d := n.s.opts.safetyPoll
	t := time.NewTimer(jitter(d))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n.notify()
			t.Reset(jitter(d))
		}
	}
}

// jitter returns a random duration between d/2 and d.
func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
