package redisstore

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"sync/atomic"
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
	// pubsubs holds the current subscription of each listener, for stop
	// to close.
	pubsubs []*redis.PubSub
	wg      sync.WaitGroup
	// messages counts the publications received, and connections the
	// pub/sub connections open, for the tests.
	messages    atomic.Int64
	connections atomic.Int64
}

func (n *notifier) init(s *Store) { n.s = s }

// Wakeups implements store.Notifier. Each call returns a new channel,
// with a buffer of one: a wake-up is dropped, never waited for, when the
// channel already holds one. The channel receives when another store (in
// this process or another) enqueues, retries, requeues or reaps a message
// earlier than every other pending one, whenever the store subscribes
// (again: after a failure of the pub/sub connection, or after Redis
// Cluster moved the slot of a channel to another node), and from the
// safety poll (WithSafetyPoll). After stop, or Close, it receives nothing
// more, and the store holds nothing for it. The pub/sub connections,
// opened by the first call, stay until Close.
func (s *Store) Wakeups() (<-chan struct{}, func()) {
	n := &s.wake
	ch := make(chan struct{}, 1)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped {
		return ch, func() {}
	}
	n.subs = append(n.subs, ch)
	if !n.started {
		n.started = true
		n.start()
	}
	return ch, func() { n.unsubscribe(ch) }
}

// unsubscribe forgets the channel ch of Wakeups.
func (n *notifier) unsubscribe(ch chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if i := slices.Index(n.subs, ch); i >= 0 {
		n.subs = slices.Delete(n.subs, i, i+1)
	}
}

// subscribers counts the channels of Wakeups, for the tests.
func (n *notifier) subscribers() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.subs)
}

// start starts the goroutines; n.mu is held.
func (n *notifier) start() {
	s := n.s
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	if s.cluster {
		n.wg.Go(func() { n.clusterLoop(ctx) })
	} else {
		// One connection for every shard's channel.
		var all []string
		for _, sh := range s.shards {
			all = append(all, sh.channel())
		}
		n.pubsubs = make([]*redis.PubSub, 1)
		n.wg.Go(func() { n.listen(ctx, 0, all, nil) })
	}
	if s.opts.safetyPoll > 0 {
		n.wg.Go(func() { n.poll(ctx) })
	}
}

// stop ends the goroutines and waits for them.
func (n *notifier) stop() {
	n.mu.Lock()
	n.stopped = true
	cancel, pubsubs := n.cancel, slices.Clone(n.pubsubs)
	n.subs = nil
	n.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	for _, ps := range pubsubs {
		if ps != nil {
			_ = ps.Close()
		}
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

// subscribe asks the server whether the scripts publish on shard channels
// (shardedScript), subscribes to chans accordingly, and records the
// subscription as listener i's. It returns nil and no error if the
// notifier stopped.
func (n *notifier) subscribe(ctx context.Context, i int, chans []string) (*redis.PubSub, error) {
	s := n.s
	sharded, err := shardedScript.Run(ctx, s.client, chans[:1]).Int()
	if err != nil {
		return nil, err
	}
	var ps *redis.PubSub
	if sharded == 1 {
		// One SSUBSCRIBE per channel: a command may name the channels
		// of one slot only, and a connection may hold several.
		ps = s.client.SSubscribe(ctx, chans[0])
		for _, ch := range chans[1:] {
			if err := ps.SSubscribe(ctx, ch); err != nil {
				_ = ps.Close()
				return nil, err
			}
		}
	} else {
		ps = s.client.Subscribe(ctx, chans...)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped {
		_ = ps.Close()
		return nil, nil
	}
	n.pubsubs[i] = ps
	n.connections.Add(1)
	return ps, nil
}

// drop closes listener i's subscription ps, for it to subscribe again
// from scratch.
func (n *notifier) drop(i int, ps *redis.PubSub) {
	n.mu.Lock()
	if i < len(n.pubsubs) && n.pubsubs[i] == ps {
		n.pubsubs[i] = nil
	}
	n.mu.Unlock()
	_ = ps.Close()
	n.connections.Add(-1)
}

// listen keeps a subscription to chans, as listener i, until ctx ends,
// waking on every message, and on every subscription, before which
// notifications may have been lost.
//
// Whenever it fails, or Redis unsubscribes it (Redis Cluster does when
// the slot of a shard channel moves to another node), listen closes the
// subscription. If regroup is nil it then makes a new one, which asks
// the server again whether it publishes on shard channels; otherwise (on
// a cluster) it signals regroup and returns, for clusterLoop to find the
// nodes that own the slots now.
func (n *notifier) listen(ctx context.Context, i int, chans []string, regroup chan<- struct{}) {
	var (
		ps      *redis.PubSub
		pause   time.Duration
		failing bool
	)
	for {
		var err error
		if ps == nil {
			ps, err = n.subscribe(ctx, i, chans)
			if ps == nil && err == nil {
				return
			}
		}
		var msg any
		if err == nil {
			msg, err = ps.ReceiveTimeout(ctx, pingInterval)
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			if ps != nil && isTimeout(err) {
				// Silence: check the connection is alive. A dead one
				// fails the next receive.
				_ = ps.Ping(ctx)
				continue
			}
			if !failing {
				n.s.opts.logger.Warn("redisstore: pub/sub failed; retrying", "queue", n.s.queue, "err", err)
				failing = true
			}
			if ps != nil {
				n.drop(i, ps)
				ps = nil
			}
			if regroup != nil {
				poke(regroup)
				return
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
		switch m := msg.(type) {
		case *redis.Subscription:
			switch m.Kind {
			case "unsubscribe", "sunsubscribe":
				// The notifier never unsubscribes: Redis did.
				n.s.opts.logger.Info("redisstore: unsubscribed by Redis; subscribing again", "queue", n.s.queue, "channel", m.Channel)
				n.drop(i, ps)
				ps = nil
				if regroup != nil {
					n.notify()
					poke(regroup)
					return
				}
			default:
				if failing {
					n.s.opts.logger.Info("redisstore: pub/sub is back", "queue", n.s.queue)
					failing = false
				}
			}
			n.notify()
		case *redis.Message:
			n.messages.Add(1)
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
