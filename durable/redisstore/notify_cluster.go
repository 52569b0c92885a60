package redisstore

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterLoop keeps, on a Redis Cluster, one pub/sub connection per
// master that owns the slot of one of the queue's shard channels (at
// most one per master, whatever the shard count), each subscribed to the
// channels of its master. When one fails, or Redis unsubscribes it (a
// slot moved), all are closed, the client reloads the slots, and the
// channels are grouped again by their masters now.
func (n *notifier) clusterLoop(ctx context.Context) {
	cc := n.s.client.(*redis.ClusterClient)
	var pause time.Duration
	for {
		groups, err := n.groupByMaster(ctx, cc)
		if err == nil {
			began := time.Now()
			n.runGroups(ctx, groups)
			if time.Since(began) > maxPause {
				pause = 0 // it held for a while: not a failure loop
			}
		} else if ctx.Err() == nil {
			n.s.opts.logger.Warn("redisstore: cannot find the nodes of the wake channels; retrying", "queue", n.s.queue, "err", err)
		}
		if ctx.Err() != nil {
			return
		}
		pause = min(max(2*pause, minPause), maxPause)
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		cc.ReloadState(ctx)
	}
}

// groupByMaster returns the queue's shard channels grouped by the master
// that owns their slot.
func (n *notifier) groupByMaster(ctx context.Context, cc *redis.ClusterClient) ([][]string, error) {
	index := map[string]int{}
	var groups [][]string
	for _, sh := range n.s.shards {
		ch := sh.channel()
		m, err := cc.MasterForKey(ctx, ch)
		if err != nil {
			return nil, err
		}
		addr := m.Options().Addr
		i, ok := index[addr]
		if !ok {
			i = len(groups)
			index[addr] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], ch)
	}
	return groups, nil
}

// runGroups listens to each group on a connection of its own until one
// of them asks to regroup, or ctx ends.
func (n *notifier) runGroups(ctx context.Context, groups [][]string) {
	n.mu.Lock()
	if n.stopped {
		n.mu.Unlock()
		return
	}
	n.pubsubs = make([]*redis.PubSub, len(groups))
	n.mu.Unlock()
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	regroup := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		for i, chans := range groups {
			wg.Go(func() { n.listen(gctx, i, chans, regroup) })
		}
		wg.Wait()
	}()
	select {
	case <-regroup:
	case <-ctx.Done():
	case <-done:
	}
	cancel()
	// The listeners may be blocked reading: closing their connections
	// ends them.
	n.mu.Lock()
	for i, ps := range n.pubsubs {
		if ps != nil {
			_ = ps.Close()
			n.pubsubs[i] = nil
			n.connections.Add(-1)
		}
	}
	n.mu.Unlock()
	<-done
}

// poke sends on ch unless it holds a value already.
func poke(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
