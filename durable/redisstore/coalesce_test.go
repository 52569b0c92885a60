package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/seed64e23a5c/timingwheel/internal/leasetest"
)

// countedStore returns a store on a client of its own, whose round trips
// (a command, or a pipeline or transaction of several) the returned
// counter counts.
func countedStore(t *testing.T, srv *redisServer, opts ...Option) (*Store, *atomic.Int64) {
	t.Helper()
	trips := new(atomic.Int64)
	c := redis.NewClient(srv.options())
	t.Cleanup(func() { _ = c.Close() })
	s := openStore(t, c, "q", opts...)
	c.AddHook(countHook{n: trips, trips: true})
	return s, trips
}

// Enqueues made at the same time share round trips: each call is written
// whole, calls that write the same ID go in different round trips, in
// order, and a lone call is one round trip, whatever its shards.
func TestConcurrentEnqueuesShareRoundTrips(t *testing.T) {
	for _, shards := range []int{1, 4} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			srv := startRedis(t)
			s, trips := countedStore(t, srv, WithShards(shards))
			const callers = 200
			var wg sync.WaitGroup
			errs := make([]error, callers)
			start := make(chan struct{})
			for g := range callers {
				wg.Go(func() {
					<-start
					// Three messages a call; "shared" IDs are written by ten calls each.
					errs[g] = s.Enqueue(ctx, []durable.Message{
						{ID: fmt.Sprintf("own%03d-a", g), Payload: []byte("a")},
						{ID: fmt.Sprintf("own%03d-b", g), Payload: []byte("b")},
						{ID: fmt.Sprintf("shared%02d", g%20), Payload: []byte("p")},
					})
				})
			}
			close(start)
			wg.Wait()
			for g, err := range errs {
				require.NoError(t, err, "call %d", g)
			}
			st, err := s.Stats(ctx)
			require.NoError(t, err)
			assert.Equal(t, 2*callers+20, st.Pending, "every call written whole, shared IDs once each")
			assert.Less(t, trips.Load(), int64(callers), "concurrent enqueues share round trips")
			t.Logf("%d enqueue calls in %d round trips", callers, trips.Load())

			before := trips.Load()
			require.NoError(t, s.Enqueue(ctx, []durable.Message{{ID: "lone1"}, {ID: "lone2"}, {ID: "lone3"}}))
			assert.Equal(t, before+1, trips.Load(), "a lone call is one round trip")
		})
	}
}

// Acks made at the same time share script calls, and each still gets its
// own outcome: a current lease is acked, a stale token is refused, and of
// two acks of one lease exactly one wins.
func TestConcurrentAcksShareScripts(t *testing.T) {
	for _, shards := range []int{1, 4} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			srv := startRedis(t)
			s, trips := countedStore(t, srv, WithShards(shards))
			const n = 300
			leases := claimN(t, s, n, 0)

			var acked, lost, dups atomic.Int64
			var wg sync.WaitGroup
			start := make(chan struct{})
			call := func(f func() error, onLost *atomic.Int64) {
				wg.Go(func() {
					<-start
					switch err := f(); err {
					case nil:
						acked.Add(1)
					case durable.ErrLeaseLost:
						onLost.Add(1)
					default:
						assert.NoError(t, err)
					}
				})
			}
			before := trips.Load()
			for i, l := range leases {
				call(func() error { return s.Ack(ctx, store.LeaseRef{ID: l.ID, Token: l.Token}) }, &dups)
				if i%3 == 0 { // a second ack of the same lease
					call(func() error { return s.Ack(ctx, store.LeaseRef{ID: l.ID, Token: l.Token}) }, &dups)
				}
				if i%5 == 0 { // a token the message never had
					call(func() error { return s.Ack(ctx, store.LeaseRef{ID: l.ID, Token: l.Token + 1<<40}) }, &lost)
				}
			}
			close(start)
			wg.Wait()
			assert.EqualValues(t, n, acked.Load(), "every lease acked once")
			assert.EqualValues(t, (n+2)/3, dups.Load(), "one of the two acks of a lease loses")
			assert.EqualValues(t, (n+4)/5, lost.Load(), "a stale token is refused")
			calls := int64(n + (n+2)/3 + (n+4)/5)
			scripts := trips.Load() - before
			assert.Less(t, scripts, calls, "concurrent acks share script calls")
			st, err := s.Stats(ctx)
			require.NoError(t, err)
			assert.Zero(t, st.Pending+st.InFlight+st.Dead, "nothing left")
			t.Logf("%d ack calls in %d round trips", calls, scripts)
		})
	}
}

// claimN enqueues n messages and claims them all: due now and handed
// out, or, if held is n, due in a minute and held (claimed ahead,
// waiting for Confirm).
func claimN(t *testing.T, s *Store, n, held int) []store.Lease {
	t.Helper()
	var due time.Time
	if held > 0 {
		due = time.Now().Add(time.Minute)
	}
	msgs := make([]durable.Message, n)
	for i := range msgs {
		msgs[i] = durable.Message{ID: fmt.Sprintf("m%04d", i), Payload: []byte("old"), Due: due}
	}
	require.NoError(t, s.Enqueue(ctx, msgs))
	var leases []store.Lease
	for len(leases) < n {
		c, err := s.Claim(ctx, store.ClaimParams{Limit: n - len(leases), Held: held, Lease: time.Minute, Ahead: time.Hour})
		require.NoError(t, err)
		require.NotEmpty(t, c.Leases, "claimed %d of %d", len(leases), n)
		leases = append(leases, c.Leases...)
	}
	return leases
}

// Confirmations made at the same time share script calls: a held lease
// is handed out, one replaced by an Enqueue before its Confirm is refused,
// and while the queue is paused each Confirm of a held lease returns
// ErrPaused and changes nothing.
func TestConcurrentConfirms(t *testing.T) {
	srv := startRedis(t)
	s, trips := countedStore(t, srv)
	const n = 100
	leases := claimN(t, s, n, n)
	for _, l := range leases {
		require.True(t, l.Ahead, "held leases wait for Confirm")
	}
	replaced := map[string]bool{}
	for i := 0; i < n; i += 4 {
		replaced[leases[i].ID] = true
		require.NoError(t, s.Enqueue(ctx, []durable.Message{{ID: leases[i].ID, Payload: []byte("new")}}))
	}
	confirmAll := func() []error {
		var wg sync.WaitGroup
		results := make([]error, n)
		start := make(chan struct{})
		for i, l := range leases {
			wg.Go(func() {
				<-start
				results[i] = s.Confirm(ctx, store.ConfirmParams{Lease: store.LeaseRef{ID: l.ID, Token: l.Token}})
			})
		}
		close(start)
		wg.Wait()
		return results
	}

	require.NoError(t, s.SetPaused(ctx, true))
	for i, err := range confirmAll() {
		if replaced[leases[i].ID] {
			assert.ErrorIs(t, err, durable.ErrLeaseLost, "%s was replaced", leases[i].ID)
		} else {
			assert.ErrorIs(t, err, durable.ErrPaused, leases[i].ID)
		}
	}
	require.NoError(t, s.SetPaused(ctx, false))

	before := trips.Load()
	for i, err := range confirmAll() {
		if replaced[leases[i].ID] {
			assert.ErrorIs(t, err, durable.ErrLeaseLost, "%s was replaced before its Confirm", leases[i].ID)
		} else {
			assert.NoError(t, err, leases[i].ID)
		}
	}
	assert.Less(t, trips.Load()-before, int64(n), "concurrent confirmations share script calls")
	// Confirmed leases are handed out: Cancel now finds them in flight.
	for _, l := range leases {
		_, err := s.Cancel(ctx, l.ID)
		if replaced[l.ID] {
			assert.NoError(t, err, "%s is pending again", l.ID)
		} else {
			assert.ErrorIs(t, err, durable.ErrInFlight, l.ID)
		}
	}
}

// Confirmations with a By made at the same time share script calls, and
// each moves its own lease's deadline, By from Redis's now, in that call;
// one without By keeps its deadline, and one of a lease lost or refused
// while paused changes nothing.
func TestConcurrentConfirmsBy(t *testing.T) {
	srv := startRedis(t)
	s, trips := countedStore(t, srv)
	const n = 60
	leases := claimN(t, s, n, n)
	by := func(i int) time.Duration { return time.Duration(i%3) * time.Hour } // 0: none
	for i := 0; i < n; i += 5 {
		require.NoError(t, s.Enqueue(ctx, []durable.Message{{ID: leases[i].ID, Payload: []byte("new"), Due: redisNow(t, s.client).Add(time.Hour)}}))
	}
	confirmAll := func() []error {
		var wg sync.WaitGroup
		results := make([]error, n)
		start := make(chan struct{})
		for i, l := range leases {
			wg.Go(func() {
				<-start
				results[i] = s.Confirm(ctx, store.ConfirmParams{Lease: l.Ref(), By: by(i)})
			})
		}
		close(start)
		wg.Wait()
		return results
	}
	snapshot := func() map[string]store.Info {
		out := map[string]store.Info{}
		for _, l := range leases {
			info, err := s.Get(ctx, l.ID)
			require.NoError(t, err)
			out[l.ID] = info
		}
		return out
	}

	require.NoError(t, s.SetPaused(ctx, true))
	unchanged := snapshot()
	confirmAll()
	assert.Equal(t, unchanged, snapshot(), "refused while paused, or lost: nothing changed")
	require.NoError(t, s.SetPaused(ctx, false))

	before := redisNow(t, s.client)
	tripsBefore := trips.Load()
	results := confirmAll()
	after := redisNow(t, s.client)
	assert.Less(t, trips.Load()-tripsBefore, int64(n), "concurrent confirmations share script calls")
	got := snapshot()
	for i, l := range leases {
		info := got[l.ID]
		if i%5 == 0 {
			assert.ErrorIs(t, results[i], durable.ErrLeaseLost, l.ID)
			assert.Equal(t, unchanged[l.ID], info, "%s: the new version, untouched", l.ID)
			continue
		}
		require.NoError(t, results[i], l.ID)
		if by(i) == 0 {
			assert.Equal(t, l.Deadline, info.Deadline, "%s: no By, the deadline kept", l.ID)
			continue
		}
		assert.False(t, info.Deadline.Before(before.Add(by(i))), "%s: deadline %v, By %v after the confirmation (from %v)", l.ID, info.Deadline, by(i), before)
		assert.False(t, info.Deadline.After(after.Add(by(i))), "%s: deadline %v, By %v after the confirmation (to %v)", l.ID, info.Deadline, by(i), after)
	}
}

// Acks and confirmations made at the same time share script calls, one
// call carrying both kinds, and each gets its own outcome: a current lease
// is acked or handed out, a stale token is refused.
func TestAcksAndConfirmationsShareScripts(t *testing.T) {
	srv := startRedis(t)
	c := redis.NewClient(srv.options())
	t.Cleanup(func() { _ = c.Close() })
	s := openStore(t, c, "q")
	var (
		mu            sync.Mutex
		scripts, both int
	)
	c.AddHook(cmdHook(func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
		if isScript(cmd, leasesScript) {
			argv := cmd.Args()[3+len(scriptKeys(cmd)):] // n, then id, token, kind, by a lease
			kinds := map[string]bool{}
			for i := 3; i < len(argv); i += 4 {
				kinds[fmt.Sprint(argv[i])] = true
			}
			mu.Lock()
			scripts++
			if kinds["a"] && kinds["c"] {
				both++
			}
			mu.Unlock()
		}
		return next(ctx, cmd)
	}))
	const n = 150
	before := 0
	leasetest.AcksAndConfirmsAtOnce(t, s, n, func() {
		mu.Lock()
		before = scripts
		mu.Unlock()
	})
	mu.Lock()
	calls, mixed := scripts-before, both
	mu.Unlock()
	assert.Less(t, calls, 3*n, "the calls share script calls")
	assert.Positive(t, mixed, "a script call carried acks and confirmations")
	t.Logf("%d calls in %d script calls, %d with both kinds", 3*n, calls, mixed)
}

// holdScript returns a hook that holds every call of sc until release is
// closed, and closes started when the first comes.
func holdScript(sc *redis.Script, started, release chan struct{}) cmdHook {
	var once sync.Once
	return func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
		if isScript(cmd, sc) {
			once.Do(func() { close(started) })
			<-release
		}
		return next(ctx, cmd)
	}
}

// Acks and confirmations do not wait for the enqueues under way: with an
// enqueue script held up, a held lease is confirmed and acked.
func TestLeasesDoNotWaitForEnqueues(t *testing.T) {
	srv := startRedis(t)
	c := redis.NewClient(srv.options())
	t.Cleanup(func() { _ = c.Close() })
	s := openStore(t, c, "q")
	leases := claimN(t, s, 1, 1)
	require.True(t, leases[0].Ahead)

	started, release := make(chan struct{}), make(chan struct{})
	c.AddHook(holdScript(enqueueScript, started, release))
	enqueued := make(chan error, 1)
	go func() { enqueued <- s.Enqueue(ctx, []durable.Message{{ID: "other"}}) }()
	<-started
	require.NoError(t, s.Confirm(ctx, store.ConfirmParams{Lease: store.LeaseRef{ID: leases[0].ID, Token: leases[0].Token}}))
	require.NoError(t, s.Ack(ctx, store.LeaseRef{ID: leases[0].ID, Token: leases[0].Token}))
	select {
	case err := <-enqueued:
		t.Fatalf("the enqueue returned (%v) while its script was held", err)
	default:
	}
	close(release)
	require.NoError(t, <-enqueued)
}

// On Redis Cluster, calls sent in one round trip get the outcome of the
// shards of their own messages: a shard's failed transaction fails the
// call that wrote to it, not one that wrote only to another shard.
func TestMergedEnqueuesOnAClusterFailByShard(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a 3-node Redis Cluster")
	}
	c := clusterClient(t, startCluster(t, 3))
	s := openStore(t, c, "q", WithShards(2))
	// The first call is held in flight while the two others wait, so that
	// they go together in the next round trip.
	started, release := make(chan struct{}), make(chan struct{})
	c.AddHook(holdScript(enqueueScript, started, release))
	failing := s.shards[1].keys[keyPending]
	c.AddHook(pipelineHook(func(ctx context.Context, cmds []redis.Cmder, next redis.ProcessPipelineHook) error {
		for _, cmd := range cmds {
			if slices.Contains(scriptKeys(cmd), failing) {
				err := errors.New("injected: connection lost")
				for _, cmd := range cmds {
					cmd.SetErr(err)
				}
				return err
			}
		}
		return next(ctx, cmds)
	}))
	first := make(chan error, 1)
	go func() { first <- s.Enqueue(ctx, []durable.Message{{ID: idsOfShard("first", 2, 0, 1)[0]}}) }()
	<-started
	var wg sync.WaitGroup
	var onZero, onOne error
	wg.Go(func() { onZero = s.Enqueue(ctx, []durable.Message{{ID: idsOfShard("zero", 2, 0, 1)[0]}}) })
	wg.Go(func() { onOne = s.Enqueue(ctx, []durable.Message{{ID: idsOfShard("one", 2, 1, 1)[0]}}) })
	require.Eventually(t, func() bool { return s.enqueues.Waiting() == 2 }, 10*time.Second, time.Millisecond,
		"the two calls wait behind the first")
	close(release)
	wg.Wait()
	require.NoError(t, <-first)
	assert.NoError(t, onZero, "its shard's transaction succeeded")
	assert.ErrorContains(t, onOne, "injected")
}

// A call of aloneEnqueue messages or more makes its own round trip: it
// is written while the script of a small call is held, and the small
// calls that arrive meanwhile still wait for a shared one.
func TestLargeEnqueuesDoNotWaitForOthers(t *testing.T) {
	srv := startRedis(t)
	c := redis.NewClient(srv.options())
	t.Cleanup(func() { _ = c.Close() })
	s := openStore(t, c, "q")

	started, release := make(chan struct{}), make(chan struct{})
	var held atomic.Bool
	c.AddHook(cmdHook(func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
		if isScript(cmd, enqueueScript) && held.CompareAndSwap(false, true) {
			close(started)
			<-release
		}
		return next(ctx, cmd)
	}))
	var once sync.Once
	leasetest.LargeEnqueueAlone(t, s, aloneEnqueue, started, func() { once.Do(func() { close(release) }) }, s.enqueues.Waiting)
}
