package pgstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/seed64e23a5c/timingwheel/internal/leasetest"
)

// statementCounter counts the statements of a pool whose text contains
// a marker.
type statementCounter struct {
	marker string
	n      atomic.Int64
}

func (c *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, c.marker) {
		c.n.Add(1)
	}
	return ctx
}

func (c *statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// tracedPool returns a pool on the package's server whose statements
// tracer sees.
func tracedPool(t *testing.T, tracer pgx.QueryTracer) *pgxpool.Pool {
	t.Helper()
	testPool(t) // skips without PostgreSQL
	cfg, err := pgxpool.ParseConfig(server.ConnString() + " pool_max_conns=20")
	require.NoError(t, err)
	cfg.ConnConfig.Tracer = tracer
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// claimAll enqueues n messages due now and claims them all.
func claimAll(t *testing.T, s *Store, n int) []store.Lease {
	t.Helper()
	msgs := make([]durable.Message, n)
	for i := range msgs {
		msgs[i] = durable.Message{ID: fmt.Sprintf("m%04d", i), Payload: []byte("p")}
	}
	require.NoError(t, s.Enqueue(ctx, msgs))
	var leases []store.Lease
	for len(leases) < n {
		c, err := s.Claim(ctx, store.ClaimParams{Limit: n - len(leases), Lease: time.Minute})
		require.NoError(t, err)
		require.NotEmpty(t, c.Leases, "claimed %d of %d", len(leases), n)
		leases = append(leases, c.Leases...)
	}
	return leases
}

// Acks and confirmations made at the same time share statements, and
// each still gets its own outcome: a current lease is acked, a stale
// token is refused, and of two acks of one lease exactly one wins.
func TestConcurrentAcksShareStatements(t *testing.T) {
	counter := &statementCounter{marker: "unnest($2::bytea[], $3::bigint[])"}
	pool := tracedPool(t, counter)
	s := openStore(t, pool, freshQueue())
	const n = 300
	leases := claimAll(t, s, n)

	var (
		wg                sync.WaitGroup
		acked, lost, dups atomic.Int64
		errs              = make(chan error, 3*n)
	)
	start := make(chan struct{})
	call := func(f func() error, onLost *atomic.Int64) {
		defer wg.Done()
		<-start
		switch err := f(); err {
		case nil:
			acked.Add(1)
		case durable.ErrLeaseLost:
			onLost.Add(1)
		default:
			errs <- err
		}
	}
	for i, l := range leases {
		wg.Add(1)
		go call(func() error { return s.Ack(ctx, store.LeaseRef{ID: l.ID, Token: l.Token}) }, &dups)
		if i%3 == 0 { // a second ack of the same lease
			wg.Add(1)
			go call(func() error { return s.Ack(ctx, store.LeaseRef{ID: l.ID, Token: l.Token}) }, &dups)
		}
		if i%5 == 0 { // a token the message never had
			wg.Add(1)
			go call(func() error { return s.Ack(ctx, store.LeaseRef{ID: l.ID, Token: l.Token + 1<<40}) }, &lost)
		}
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.EqualValues(t, n, acked.Load(), "every lease acked once")
	assert.EqualValues(t, (n+2)/3, dups.Load(), "one of the two acks of a lease loses")
	assert.EqualValues(t, (n+4)/5, lost.Load(), "a stale token is refused")
	calls := int64(n + (n+2)/3 + (n+4)/5)
	assert.Less(t, counter.n.Load(), calls, "concurrent acks share statements")
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Zero(t, st.Pending+st.InFlight+st.Dead, "nothing left")
	t.Logf("%d ack calls in %d statements", calls, counter.n.Load())
}

// leaseKinds records what each statement of leases carried.
type leaseKinds struct {
	mu               sync.Mutex
	statements, both int // both: with acks and confirmations
}

func (k *leaseKinds) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if !strings.Contains(d.SQL, "unnest($4::bytea[], $5::bigint[], $6::bigint[])") || len(d.Args) != 6 {
		return ctx
	}
	acks, _ := d.Args[1].([][]byte)
	confirms, _ := d.Args[3].([][]byte)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.statements++
	if len(acks) > 0 && len(confirms) > 0 {
		k.both++
	}
	return ctx
}

func (k *leaseKinds) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// Acks and confirmations made at the same time go in the same statements
// (one commit for both kinds), and each gets its own outcome: a current
// lease is acked or handed out, a stale token is refused.
func TestAcksAndConfirmationsShareStatements(t *testing.T) {
	kinds := &leaseKinds{}
	s := openStore(t, tracedPool(t, kinds), freshQueue())
	const n = 150
	before := 0
	leasetest.AcksAndConfirmsAtOnce(t, s, n, func() {
		kinds.mu.Lock()
		before = kinds.statements
		kinds.mu.Unlock()
	})
	kinds.mu.Lock()
	statements, both := kinds.statements-before, kinds.both
	kinds.mu.Unlock()
	assert.Less(t, statements, 3*n, "the calls share statements")
	assert.Positive(t, both, "a statement carried acks and confirmations")
	t.Logf("%d calls in %d statements, %d with both kinds", 3*n, statements, both)
}

// A held lease confirmed by many goroutines at once is handed out once
// each, and an Enqueue that replaced a message before its Confirm makes
// that Confirm fail.
func TestConcurrentConfirms(t *testing.T) {
	s := newStore(t)
	const n = 100
	msgs := make([]durable.Message, n)
	for i := range msgs {
		msgs[i] = durable.Message{ID: fmt.Sprintf("h%03d", i), Payload: []byte("old"), Due: dbNow(t).Add(time.Minute)}
	}
	require.NoError(t, s.Enqueue(ctx, msgs))
	c, err := s.Claim(ctx, store.ClaimParams{Limit: n, Held: n, Lease: time.Minute, Ahead: time.Hour})
	require.NoError(t, err)
	require.Len(t, c.Leases, n)
	for _, l := range c.Leases {
		require.True(t, l.Ahead, "held leases wait for Confirm")
	}
	replaced := map[string]bool{}
	for i := 0; i < n; i += 4 {
		id := c.Leases[i].ID
		replaced[id] = true
		require.NoError(t, s.Enqueue(ctx, []durable.Message{{ID: id, Payload: []byte("new")}}))
	}
	var wg sync.WaitGroup
	results := make([]error, n)
	for i, l := range c.Leases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = s.Confirm(ctx, store.ConfirmParams{Lease: store.LeaseRef{ID: l.ID, Token: l.Token}})
		}()
	}
	wg.Wait()
	for i, l := range c.Leases {
		if replaced[l.ID] {
			assert.ErrorIs(t, results[i], durable.ErrLeaseLost, "%s was replaced before its Confirm", l.ID)
		} else {
			assert.NoError(t, results[i], l.ID)
		}
	}
	// Confirmed leases are handed out: Cancel now finds them in flight.
	for _, l := range c.Leases {
		_, err := s.Cancel(ctx, l.ID)
		if replaced[l.ID] {
			assert.NoError(t, err, "%s is pending again", l.ID)
		} else {
			assert.ErrorIs(t, err, durable.ErrInFlight, l.ID)
		}
	}
}

// Confirmations made at the same time, each with its own By (an hour or
// more, rounded up to the microsecond, or none), share statements, and
// each moves its own lease's deadline from the database's clock; a
// confirmation of a stale token, By and all, changes nothing.
func TestConcurrentConfirmsWithTheirOwnBy(t *testing.T) {
	counter := &statementCounter{marker: "unnest($4::bytea[], $5::bigint[], $6::bigint[])"}
	s := openStore(t, tracedPool(t, counter), freshQueue())
	const n = 200
	msgs := make([]durable.Message, n)
	for i := range msgs {
		msgs[i] = durable.Message{ID: fmt.Sprintf("c%03d", i), Payload: []byte("p"), Due: dbNow(t).Add(time.Minute)}
	}
	require.NoError(t, s.Enqueue(ctx, msgs))
	c, err := s.Claim(ctx, store.ClaimParams{Limit: n, Held: n, Lease: time.Hour, HeldLease: time.Minute, Ahead: time.Hour})
	require.NoError(t, err)
	require.Len(t, c.Leases, n)
	by := func(i int) time.Duration { // 0 for every fourth: the deadline kept
		return time.Duration(i%4)*time.Hour + time.Duration(i%3) // and ns, rounded up
	}

	var wg sync.WaitGroup
	errs, stale := make([]error, n), make([]error, n)
	start := make(chan struct{})
	before := dbNow(t)
	for i, l := range c.Leases {
		wg.Go(func() {
			<-start
			errs[i] = s.Confirm(ctx, store.ConfirmParams{Lease: l.Ref(), By: by(i)})
		})
		if i%5 == 0 {
			wg.Go(func() {
				<-start
				stale[i] = s.Confirm(ctx, store.ConfirmParams{Lease: store.LeaseRef{ID: l.ID, Token: l.Token + 1<<40},
					By: 100 * time.Hour})
			})
		}
	}
	close(start)
	wg.Wait()
	after := dbNow(t)

	for i, l := range c.Leases {
		require.NoError(t, errs[i], l.ID)
		if i%5 == 0 {
			require.ErrorIs(t, stale[i], durable.ErrLeaseLost, "%s: a stale token", l.ID)
		}
		got := getInfo(t, s, l.ID).Deadline
		if by(i) == 0 {
			assert.True(t, got.Equal(l.Deadline), "%s: confirmed without By: deadline %v, claimed with %v", l.ID, got, l.Deadline)
			continue
		}
		d := micros(by(i))
		lo, hi := before.Add(time.Duration(d)*time.Microsecond), after.Add(time.Duration(d)*time.Microsecond)
		assert.True(t, !got.Before(lo) && !got.After(hi), "%s: deadline %v, want %v after the confirmation, in [%v, %v]",
			l.ID, got, by(i), lo, hi)
	}
	calls := int64(n + (n+4)/5)
	assert.Less(t, counter.n.Load(), calls, "concurrent confirmations share statements")
	t.Logf("%d confirmations in %d statements", calls, counter.n.Load())
}

// getInfo returns what s holds of id.
func getInfo(t *testing.T, s *Store, id string) store.Info {
	t.Helper()
	info, err := s.Get(ctx, id)
	require.NoError(t, err)
	return info
}

// A call whose context has ended returns at once with its error, and the
// calls batched with it are not failed by it.
func TestBatchedCallsKeepTheirOwnContexts(t *testing.T) {
	s := newStore(t)
	leases := claimAll(t, s, 40)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	assert.ErrorIs(t, s.Ack(cancelled, store.LeaseRef{ID: leases[0].ID, Token: leases[0].Token}), context.Canceled)

	var wg sync.WaitGroup
	errs := make([]error, len(leases))
	for i, l := range leases[1:] {
		c := ctx
		if i%2 == 0 {
			var stop context.CancelFunc
			c, stop = context.WithCancel(ctx)
			defer stop()
			go stop() // ends while the call waits or runs: it may or may not ack
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i+1] = s.Ack(c, store.LeaseRef{ID: l.ID, Token: l.Token})
		}()
	}
	wg.Wait()
	for i := 1; i < len(leases); i++ {
		if (i-1)%2 == 1 {
			assert.NoError(t, errs[i], "a call with a live context is not failed by another's")
		} else if errs[i] != nil {
			assert.ErrorIs(t, errs[i], context.Canceled)
		}
	}
}

// Enqueues made at the same time share statements: each call is written
// whole, calls that write the same ID go in different statements (so
// neither fails), and a lone call is one statement of its own.
func TestConcurrentEnqueuesShareStatements(t *testing.T) {
	counter := &statementCounter{marker: "INSERT INTO"}
	s := openStore(t, tracedPool(t, counter), freshQueue())

	const callers = 200
	var wg sync.WaitGroup
	errs := make([]error, callers)
	start := make(chan struct{})
	for g := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			// Three messages a call; "shared" IDs are written by ten calls each.
			errs[g] = s.Enqueue(ctx, []durable.Message{
				{ID: fmt.Sprintf("own%03d-a", g), Payload: []byte("a")},
				{ID: fmt.Sprintf("own%03d-b", g), Payload: []byte("b")},
				{ID: fmt.Sprintf("shared%02d", g%20), Payload: []byte(fmt.Sprint(g))},
			})
		}()
	}
	close(start)
	wg.Wait()
	for g, err := range errs {
		require.NoError(t, err, "call %d", g)
	}
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2*callers+20, st.Pending, "every call written whole, shared IDs once each")
	assert.Less(t, counter.n.Load(), int64(callers), "concurrent enqueues share statements")
	t.Logf("%d enqueue calls in %d statements", callers, counter.n.Load())

	before := counter.n.Load()
	require.NoError(t, s.Enqueue(ctx, []durable.Message{{ID: "lone"}}))
	assert.Equal(t, before+1, counter.n.Load(), "a lone call is one statement")
}

// holdingTracer holds the first statement whose text contains marker
// until release is closed, and closes started when it comes. The marker
// of an enqueue is "excluded.payload": "INSERT INTO" would hold the
// insert of a new store's migration.
type holdingTracer struct {
	marker           string
	held             atomic.Bool
	started, release chan struct{}
}

func (h *holdingTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, h.marker) && h.held.CompareAndSwap(false, true) {
		close(h.started)
		<-h.release
	}
	return ctx
}

func (h *holdingTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// An Enqueue of aloneEnqueue messages or more runs its own statement: it
// is written while the statement of a small call is held, and a small
// call that arrives meanwhile still waits to share the next.
func TestLargeEnqueuesDoNotWaitForOthers(t *testing.T) {
	h := &holdingTracer{marker: "excluded.payload", started: make(chan struct{}), release: make(chan struct{})}
	s := openStore(t, tracedPool(t, h), freshQueue())
	var once sync.Once
	leasetest.LargeEnqueueAlone(t, s, aloneEnqueue, h.started, func() { once.Do(func() { close(h.release) }) }, s.enqueues.Waiting)
}

// A statement of acks and confirmations and an Enqueue that replaces
// some of the same messages lock their rows in one order (by ID), so
// neither waits for the other in a cycle: PostgreSQL would abort one of
// them with "deadlock detected" after a second.
func TestLeasesAndEnqueuesNeverDeadlock(t *testing.T) {
	s := newStore(t)
	const n, rounds = 200, 15
	msgs := make([]durable.Message, n)
	for i := range msgs {
		msgs[i] = durable.Message{ID: fmt.Sprintf("d%04d", i), Payload: []byte("p"), Due: dbNow(t).Add(time.Hour)}
	}
	for round := range rounds {
		require.NoError(t, s.Enqueue(ctx, msgs))
		c, err := s.Claim(ctx, store.ClaimParams{Limit: n, Held: n, Lease: time.Minute, Ahead: 2 * time.Hour})
		require.NoError(t, err)
		require.Len(t, c.Leases, n)
		// The even IDs are handed out, to be acked; the odd ones wait
		// for their confirmation.
		for i := 0; i < n; i += 2 {
			require.NoError(t, s.Confirm(ctx, store.ConfirmParams{Lease: store.LeaseRef{ID: c.Leases[i].ID, Token: c.Leases[i].Token}}))
		}
		var wg sync.WaitGroup
		errs := make(chan error, 2*n)
		start := make(chan struct{})
		for i, l := range c.Leases {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				var err error
				if i%2 == 0 {
					err = s.Ack(ctx, store.LeaseRef{ID: l.ID, Token: l.Token})
				} else {
					err = s.Confirm(ctx, store.ConfirmParams{Lease: store.LeaseRef{ID: l.ID, Token: l.Token}})
				}
				if err != nil && err != durable.ErrLeaseLost {
					errs <- fmt.Errorf("round %d, %s: %w", round, l.ID, err)
				}
			}()
		}
		// Each Enqueue replaces an odd ID and the even one after it: it
		// locks the odd row first, where the acks come first.
		for b := 1; b+1 < n; b += 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if err := s.Enqueue(ctx, msgs[b:b+2]); err != nil {
					errs <- fmt.Errorf("round %d, enqueue: %w", round, err)
				}
			}()
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
	}
}

// callKey marks the context of a call for splitTracer, and enqueueKey
// that of an enqueue statement.
type callKey struct{}
type enqueueKey struct{}

// splitTracer watches the enqueue statements of two calls, whose contexts
// carry callKey "A" and "B": it signals when A's first statement ends, and
// holds A's second until B's first has ended, or for half a second.
type splitTracer struct {
	mu                       sync.Mutex
	aStarted                 int
	aFirstEnded, bFirstEnded chan struct{}
	aOnce, bOnce             sync.Once
}

func (s *splitTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if !strings.Contains(d.SQL, "excluded.payload") {
		return ctx
	}
	ctx = context.WithValue(ctx, enqueueKey{}, true)
	if ctx.Value(callKey{}) != "A" {
		return ctx
	}
	s.mu.Lock()
	s.aStarted++
	second := s.aStarted == 2
	s.mu.Unlock()
	if second {
		select {
		case <-s.bFirstEnded:
		case <-time.After(500 * time.Millisecond): // B waits for A: let A go on
		}
	}
	return ctx
}

func (s *splitTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	if ctx.Value(enqueueKey{}) == nil {
		return
	}
	switch ctx.Value(callKey{}) {
	case "A":
		s.aOnce.Do(func() { close(s.aFirstEnded) })
	case "B":
		s.bOnce.Do(func() { close(s.bFirstEnded) })
	}
}

// Two calls that each take several statements, over the same IDs in
// crossing orders, lock their rows in one order (by ID, over the whole
// call), so neither waits for the other in a cycle: each statement of
// the first call has ended before the second starts (splitTracer), which,
// with the statements in the calls' own orders, deadlocked them.
func TestSplitEnqueuesNeverDeadlock(t *testing.T) {
	h := &splitTracer{aFirstEnded: make(chan struct{}), bFirstEnded: make(chan struct{})}
	s := openStore(t, tracedPool(t, h), freshQueue())
	xs := make([]durable.Message, maxEnqueueRows)
	ys := make([]durable.Message, maxEnqueueRows)
	for i := range xs {
		xs[i] = durable.Message{ID: fmt.Sprintf("a%04d", i), Payload: []byte("x")}
		ys[i] = durable.Message{ID: fmt.Sprintf("b%04d", i), Payload: []byte("y")}
	}
	errA := make(chan error, 1)
	go func() {
		errA <- s.Enqueue(context.WithValue(ctx, callKey{}, "A"), append(slices.Clone(xs), ys...))
	}()
	<-h.aFirstEnded
	errB := s.Enqueue(context.WithValue(ctx, callKey{}, "B"), append(slices.Clone(ys), xs...))
	require.NoError(t, <-errA)
	require.NoError(t, errB)
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2*maxEnqueueRows, st.Pending)
}

// A call that takes several statements keeps its own order among
// messages of equal due times, though its statements take the messages in
// ID order.
func TestSplitEnqueueKeepsTheCallsOrder(t *testing.T) {
	s := newStore(t)
	due := time.Now().Add(-time.Second)
	msgs := make([]durable.Message, maxEnqueueRows+maxEnqueueRows/2)
	for i := range msgs {
		msgs[i] = durable.Message{ID: fmt.Sprintf("m%05d", len(msgs)-i), Due: due} // IDs in descending order
	}
	require.NoError(t, s.Enqueue(ctx, msgs))
	var got []string
	for len(got) < len(msgs) {
		c, err := s.Claim(ctx, store.ClaimParams{Limit: MaxClaim, Lease: time.Minute})
		require.NoError(t, err)
		require.NotEmpty(t, c.Leases)
		for _, l := range c.Leases {
			got = append(got, l.ID)
		}
	}
	want := make([]string, len(msgs))
	for i, m := range msgs {
		want[i] = m.ID
	}
	assert.Equal(t, want, got)
}
