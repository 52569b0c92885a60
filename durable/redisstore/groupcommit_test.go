package redisstore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// A scriptGate holds every call of a script before it goes to Redis: it
// sends the call's ARGV on arrived, and waits for a value on release.
// So a test knows when a call is in flight, and what it carries, and
// decides when it ends.
type scriptGate struct {
	sc      *redis.Script
	arrived chan []string
	release chan struct{}
}

func newScriptGate(sc *redis.Script) *scriptGate {
	return &scriptGate{sc: sc, arrived: make(chan []string, 100), release: make(chan struct{}, 100)}
}

func (g *scriptGate) hook() cmdHook {
	return func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
		if isScript(cmd, g.sc) {
			g.arrived <- scriptArgv(cmd)
			<-g.release
		}
		return next(ctx, cmd)
	}
}

// next returns the ARGV of the next call, which must come within 10s.
func (g *scriptGate) next(t *testing.T) []string {
	t.Helper()
	select {
	case a := <-g.arrived:
		return a
	case <-time.After(10 * time.Second):
		t.Fatal("no script call came")
		return nil
	}
}

// none fails the test if a call came.
func (g *scriptGate) none(t *testing.T) {
	t.Helper()
	select {
	case a := <-g.arrived:
		t.Fatalf("unexpected script call with ARGV %q", a)
	default:
	}
}

// scriptArgv returns the ARGV of a script command.
func scriptArgv(cmd redis.Cmder) []string {
	a := cmd.Args()
	var out []string
	for _, v := range a[3+len(scriptKeys(cmd)):] {
		switch v := v.(type) {
		case []byte:
			out = append(out, string(v))
		default:
			out = append(out, fmt.Sprint(v))
		}
	}
	return out
}

// enqueueArgIDs returns the IDs of the messages of an enqueue script call,
// and the nonce of each.
func enqueueArgIDs(argv []string) (ids, nonces []string) {
	for i := 1; i+4 < len(argv); i += 5 {
		nonces = append(nonces, argv[i])
		ids = append(ids, argv[i+1])
	}
	return ids, nonces
}

// leaseArgIDs returns the IDs of an ack or confirm script call.
func leaseArgIDs(argv []string) []string {
	var ids []string
	for i := 0; i+1 < len(argv); i += 2 {
		ids = append(ids, argv[i])
	}
	return ids
}

// waitQueued waits until n calls are queued in b.
func waitQueued(t *testing.T, b *committer, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.queued) == n
	}, 10*time.Second, time.Millisecond, "waiting for %d queued calls", n)
}

// goErr runs f in a goroutine and returns the channel of its error.
func goErr(f func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	return ch
}

// TestGroupCommitEnqueue: a lone Enqueue goes to Redis at once; the calls
// that come while it is in flight wait, and then go together in one script
// call, in the order they came, each with its own nonce; the messages come
// out in that order.
func TestGroupCommitEnqueue(t *testing.T) {
	s, c, _ := newTestStore(t)
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("later", time.Now().Add(time.Hour))})) // the script is cached
	g := newScriptGate(enqueueScript)
	c.AddHook(g.hook())
	due := redisNow(t, c).Add(-time.Second) // one due time for all
	enqueue := func(ids ...string) <-chan error {
		var msgs []durable.Message
		for _, id := range ids {
			msgs = append(msgs, msg(id, due))
		}
		return goErr(func() error { return s.Enqueue(ctx, msgs) })
	}
	b := &s.commits[0].enqueue

	a := enqueue("a")
	got, _ := enqueueArgIDs(g.next(t))
	assert.Equal(t, []string{"a"}, got, "a lone call goes at once")
	queued := []<-chan error{enqueue("b1", "b2")}
	waitQueued(t, b, 1)
	queued = append(queued, enqueue("c"))
	waitQueued(t, b, 2)
	queued = append(queued, enqueue("d"))
	waitQueued(t, b, 3)
	g.none(t)

	g.release <- struct{}{}
	require.NoError(t, <-a)
	got, nonces := enqueueArgIDs(g.next(t))
	assert.Equal(t, []string{"b1", "b2", "c", "d"}, got, "the three calls queued go in one script call")
	assert.Equal(t, nonces[0], nonces[1], "one nonce per call")
	assert.NotEqual(t, nonces[1], nonces[2])
	assert.NotEqual(t, nonces[2], nonces[3])
	g.release <- struct{}{}
	for _, ch := range queued {
		require.NoError(t, <-ch)
	}
	assert.Equal(t, int64(3), b.batches.Load()) // with the first call, before the gate
	assert.Equal(t, int64(5), b.calls.Load())

	e := enqueue("e")
	got, _ = enqueueArgIDs(g.next(t))
	assert.Equal(t, []string{"e"}, got, "a lone call goes at once")
	g.release <- struct{}{}
	require.NoError(t, <-e)
	assert.Equal(t, []string{"a", "b1", "b2", "c", "d", "e"}, ids(claimAll(t, s, time.Minute)))
}

// TestGroupCommitEnqueueSameIDInABatch: two calls of a batch write the same
// ID: the later call wins, in its place, as if the calls had gone one
// after the other; and the batch sent again (a lost reply) changes
// nothing.
func TestGroupCommitEnqueueSameIDInABatch(t *testing.T) {
	s, c, _ := newTestStore(t)
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("warm-up", time.Now().Add(time.Hour))}))
	g := newScriptGate(enqueueScript)
	c.AddHook(g.hook())
	// Once armed, the next enqueue script call is sent again, as go-redis
	// does when a reply is lost, after a consumer claimed its messages.
	var armed atomic.Bool
	c.AddHook(cmdHook(func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
		err := next(ctx, cmd)
		if err == nil && isScript(cmd, enqueueScript) && armed.CompareAndSwap(true, false) {
			claimAll(t, s, time.Minute)
			err = next(ctx, cmd)
		}
		return err
	}))
	b := &s.commits[0].enqueue
	due := redisNow(t, c).Add(-time.Second)

	first := goErr(func() error { return s.Enqueue(ctx, []durable.Message{msg("lead", due)}) })
	g.next(t)
	one := goErr(func() error {
		return s.Enqueue(ctx, []durable.Message{{ID: "x", Payload: []byte("one"), Due: due}, msg("y", due)})
	})
	waitQueued(t, b, 1)
	two := goErr(func() error { return s.Enqueue(ctx, []durable.Message{{ID: "x", Payload: []byte("two"), Due: due}}) })
	waitQueued(t, b, 2)
	g.release <- struct{}{}
	require.NoError(t, <-first)
	got, _ := enqueueArgIDs(g.next(t))
	assert.Equal(t, []string{"y", "x"}, got)
	armed.Store(true)
	g.release <- struct{}{}
	require.NoError(t, <-one)
	require.NoError(t, <-two)
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, st.InFlight, "lead, y and x stay claimed")
	assert.Equal(t, 1, st.Pending, "warm-up")
	info, err := s.Get(ctx, "x")
	require.NoError(t, err)
	assert.Equal(t, "two", string(info.Payload))
}

// TestGroupCommitAck: acks that queued go in one script call, each
// answered on its own: a lease lost fails its ack only, an ack of a lease
// acked by an earlier one of the batch fails, and a caller whose context
// ends while queued gets its error at once, and its ack is not made.
func TestGroupCommitAck(t *testing.T) {
	s, c, _ := newTestStore(t)
	for _, id := range seqIDs("m", 6) {
		require.NoError(t, s.Enqueue(ctx, []durable.Message{msg(id, time.Time{})}))
	}
	ls := waitClaim(t, s, time.Minute, 6)
	require.ErrorIs(t, s.Ack(ctx, "none", 1), durable.ErrLeaseLost) // the script is cached
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg(ls[1].ID, time.Now().Add(time.Hour))}), "m1's lease is lost")
	g := newScriptGate(ackScript)
	c.AddHook(g.hook())
	b := &s.commits[0].ack
	ack := func(ctx context.Context, l durable.Lease) <-chan error {
		return goErr(func() error { return s.Ack(ctx, l.ID, l.Token) })
	}

	first := ack(ctx, ls[0])
	assert.Equal(t, []string{ls[0].ID}, leaseArgIDs(g.next(t)))
	lost := ack(ctx, ls[1])
	waitQueued(t, b, 1)
	good := ack(ctx, ls[2])
	waitQueued(t, b, 2)
	twice := []<-chan error{ack(ctx, ls[3])}
	waitQueued(t, b, 3)
	twice = append(twice, ack(ctx, ls[3]))
	waitQueued(t, b, 4)
	gone, cancel := context.WithCancel(ctx)
	cancelled := ack(gone, ls[4])
	waitQueued(t, b, 5)
	cancel()
	require.ErrorIs(t, <-cancelled, context.Canceled, "returned while the batch before is still in flight")
	waitQueued(t, b, 4)
	done, cancelDone := context.WithCancel(ctx)
	cancelDone()
	require.ErrorIs(t, s.Ack(done, ls[5].ID, ls[5].Token), context.Canceled)
	waitQueued(t, b, 4)
	g.none(t)

	g.release <- struct{}{}
	require.NoError(t, <-first)
	assert.Equal(t, []string{ls[1].ID, ls[2].ID, ls[3].ID, ls[3].ID}, leaseArgIDs(g.next(t)))
	g.release <- struct{}{}
	require.ErrorIs(t, <-lost, durable.ErrLeaseLost)
	require.NoError(t, <-good)
	e1, e2 := <-twice[0], <-twice[1]
	require.NoError(t, e1, "the first ack of m3 in the batch")
	require.ErrorIs(t, e2, durable.ErrLeaseLost, "the second finds it acked")

	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, st.Pending, "m1, enqueued again")
	assert.Equal(t, 2, st.InFlight, "m4 and m5: their acks were not made")
	for _, l := range ls[4:] {
		ch := ack(ctx, l)
		assert.Equal(t, []string{l.ID}, leaseArgIDs(g.next(t)))
		g.release <- struct{}{}
		require.NoError(t, <-ch, "the lease of %s held", l.ID)
	}
}

// TestGroupCommitConfirm: confirms that queued go in one script call, each
// answered on its own; a message taken back by an Enqueue fails its own
// confirm only.
func TestGroupCommitConfirm(t *testing.T) {
	s, c, _ := newTestStore(t)
	due := redisNow(t, c).Add(time.Hour)
	var msgs []durable.Message
	for _, id := range seqIDs("m", 4) {
		msgs = append(msgs, msg(id, due))
	}
	require.NoError(t, s.Enqueue(ctx, msgs))
	cl, err := s.Claim(ctx, 4, time.Minute, 2*time.Hour)
	require.NoError(t, err)
	ls := cl.Leases
	require.Len(t, ls, 4)
	for _, l := range ls {
		require.True(t, l.Ahead)
	}
	require.ErrorIs(t, s.Confirm(ctx, "none", 1), durable.ErrLeaseLost) // the script is cached
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg(ls[2].ID, due)}), "m2 is taken back")
	g := newScriptGate(confirmScript)
	c.AddHook(g.hook())
	b := &s.commits[0].confirm
	confirm := func(l durable.Lease) <-chan error {
		return goErr(func() error { return s.Confirm(ctx, l.ID, l.Token) })
	}

	first := confirm(ls[0])
	assert.Equal(t, []string{ls[0].ID}, leaseArgIDs(g.next(t)))
	var queued []<-chan error
	for i, l := range ls[1:] {
		queued = append(queued, confirm(l))
		waitQueued(t, b, i+1)
	}
	g.release <- struct{}{}
	require.NoError(t, <-first)
	assert.Equal(t, []string{ls[1].ID, ls[2].ID, ls[3].ID}, leaseArgIDs(g.next(t)))
	g.release <- struct{}{}
	require.NoError(t, <-queued[0])
	require.ErrorIs(t, <-queued[1], durable.ErrLeaseLost)
	require.NoError(t, <-queued[2])

	for _, l := range []durable.Lease{ls[0], ls[1], ls[3]} {
		_, err := s.Cancel(ctx, l.ID)
		require.ErrorIs(t, err, durable.ErrInFlight, "%s is confirmed", l.ID)
	}
	removed, err := s.Cancel(ctx, ls[2].ID)
	require.NoError(t, err)
	assert.True(t, removed, "m2 is pending")
}

// TestGroupCommitOrderUnderConcurrency: 8 producers enqueue one message at
// a time, all due at one time: the script calls carry several calls each,
// and the messages come out in the order the script calls wrote them,
// which keeps each producer's order.
func TestGroupCommitOrderUnderConcurrency(t *testing.T) {
	s, c, _ := newTestStore(t)
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("warm-up", time.Now().Add(time.Hour))}))
	var mu sync.Mutex
	var sent []string
	calls := 0
	c.AddHook(cmdHook(func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
		if isScript(cmd, enqueueScript) {
			got, _ := enqueueArgIDs(scriptArgv(cmd))
			mu.Lock()
			sent = append(sent, got...)
			calls++
			mu.Unlock()
		}
		return next(ctx, cmd)
	}))
	due := redisNow(t, c).Add(-time.Second)
	const producers, each = 8, 40
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range each {
				assert.NoError(t, s.Enqueue(ctx, []durable.Message{msg(fmt.Sprintf("p%d-%02d", p, i), due)}))
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, sent, producers*each)
	assert.Less(t, calls, producers*each, "some script calls carried several enqueues")
	t.Logf("%d enqueues in %d script calls", producers*each, calls)
	got := ids(claimAll(t, s, time.Minute))
	require.Equal(t, sent, got, "the order of the script calls")
	next := make([]int, producers)
	for _, id := range got {
		var p, i int
		_, err := fmt.Sscanf(id, "p%d-%d", &p, &i)
		require.NoError(t, err)
		require.Equal(t, next[p], i, "producer %d's order", p)
		next[p]++
	}
}

// TestGroupCommitLeadFiltersEndedContexts: a call whose context ended after
// it joined a batch but before the batch was sent gets its context's error
// and is left out of the script call; the others go.
func TestGroupCommitLeadFiltersEndedContexts(t *testing.T) {
	var sent [][]string
	b := &committer{maxSize: 10, maxBytes: 10, send: func(_ context.Context, calls []*groupCall) {
		var batch []string
		for _, c := range calls {
			batch = append(batch, c.id)
			c.err = nil
		}
		sent = append(sent, batch)
	}}
	gone, cancel := context.WithCancel(ctx)
	cancel()
	mk := func(ctx context.Context, id string) *groupCall {
		return &groupCall{ctx: ctx, id: id, size: 1, done: make(chan struct{}, 1)}
	}
	lead, ended, alive := mk(ctx, "lead"), mk(gone, "ended"), mk(ctx, "alive")
	b.maxInFlight, b.inFlight = 1, 1
	b.lead([]*groupCall{lead, ended, alive})
	assert.Equal(t, [][]string{{"lead", "alive"}}, sent)
	require.NoError(t, lead.err)
	require.ErrorIs(t, ended.err, context.Canceled)
	require.NoError(t, alive.err)
	assert.Len(t, ended.done, 1, "answered")
	assert.Len(t, alive.done, 1, "answered")
	assert.Zero(t, b.inFlight, "nothing queued: idle")
}

// TestGroupCommitHandOverBounds: the calls queued go to the next batch up
// to its bounds, the first always; the rest wait for the batch after.
func TestGroupCommitHandOverBounds(t *testing.T) {
	b := &committer{maxSize: 4, maxBytes: 100}
	mk := func(size, bytes int) *groupCall {
		return &groupCall{ctx: ctx, size: size, bytes: bytes, done: make(chan struct{}, 1)}
	}
	big, a, bb, cc := mk(9, 10), mk(2, 10), mk(2, 80), mk(1, 20)
	b.maxInFlight, b.inFlight = 1, 1
	b.queued = []*groupCall{big, a, bb, cc}
	b.handOver()
	assert.Equal(t, []*groupCall{big}, big.batch, "a call over the bounds goes alone")
	assert.Len(t, big.done, 1, "told to lead")
	b.handOver()
	assert.Equal(t, []*groupCall{a, bb}, a.batch, "4 messages, 90 bytes")
	b.handOver()
	assert.Equal(t, []*groupCall{cc}, cc.batch)
	assert.Equal(t, 1, b.inFlight)
	b.handOver()
	assert.Zero(t, b.inFlight)
}

// TestBatchContext: a batch's context ends when every call's has, not
// before, and keeps the first call's values.
func TestBatchContext(t *testing.T) {
	type key struct{}
	c1, cancel1 := context.WithCancel(context.WithValue(ctx, key{}, "v"))
	c2, cancel2 := context.WithCancelCause(ctx)
	bctx, stop := batchContext([]*groupCall{{ctx: c1}, {ctx: c2}})
	defer stop()
	assert.Equal(t, "v", bctx.Value(key{}))
	cancel1()
	assert.NoError(t, bctx.Err(), "one caller gave up, the other waits")
	why := fmt.Errorf("the last one")
	cancel2(why)
	select {
	case <-bctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the batch's context did not end")
	}
	assert.ErrorIs(t, context.Cause(bctx), why)
}

// TestGroupCommitOnClusterShards: on Redis Cluster with shards, concurrent
// enqueues and acks are batched per shard: every script call carries the
// IDs of its own shard only, and everything enqueued is delivered and
// acked.
func TestGroupCommitOnClusterShards(t *testing.T) {
	addrs := startCluster(t, 3)
	cc := clusterClient(t, addrs)
	s := openStore(t, cc, "q", WithShards(4))
	var mu sync.Mutex
	calls, mixed := map[string]int{}, 0
	shardOfKeys := map[string]int{}
	for sh := range s.shards {
		shardOfKeys[s.shards[sh].keys[0]] = sh
	}
	cc.AddHook(cmdHook(func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
		var got []string
		name := ""
		switch {
		case isScript(cmd, enqueueScript):
			got, _ = enqueueArgIDs(scriptArgv(cmd))
			name = "enqueue"
		case isScript(cmd, ackScript):
			got = leaseArgIDs(scriptArgv(cmd))
			name = "ack"
		}
		if name != "" {
			sh := shardOfKeys[scriptKeys(cmd)[0]]
			mu.Lock()
			calls[name]++
			for _, id := range got {
				if shardOf(id, 4) != sh {
					mixed++
				}
			}
			mu.Unlock()
		}
		return next(ctx, cmd)
	}))
	const producers, each = 8, 25
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range each {
				assert.NoError(t, s.Enqueue(ctx, []durable.Message{msg(fmt.Sprintf("p%d-%02d", p, i), time.Time{})}))
			}
		})
	}
	wg.Wait()
	ls := waitClaim(t, s, time.Minute, producers*each)
	work := make(chan durable.Lease, len(ls))
	for _, l := range ls {
		work <- l
	}
	close(work)
	for range producers {
		wg.Go(func() {
			for l := range work {
				assert.NoError(t, s.Ack(ctx, l.ID, l.Token))
			}
		})
	}
	wg.Wait()
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, durable.Stats{}, st)
	mu.Lock()
	defer mu.Unlock()
	assert.Zero(t, mixed, "a script call carried another shard's ID")
	assert.Positive(t, calls["enqueue"])
	assert.Positive(t, calls["ack"])
	t.Logf("%d enqueues and acks in %v script calls", producers*each, calls)
}
