//go:build unix

package pgstore

import (
	"context"
	"log/slog"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/seed64e23a5c/timingwheel/internal/pgtest"
)

// storeErrors is an Observer that keeps the EventStoreErrors it hears,
// with when it heard them.
type storeErrors struct {
	mu     sync.Mutex
	events []durable.Event
	at     []time.Time
}

func (o *storeErrors) Observe(e durable.Event) {
	if e.Kind != durable.EventStoreError {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, e)
	o.at = append(o.at, time.Now())
}

// since returns the operations of the errors heard since t, and when the
// first came.
func (o *storeErrors) since(t time.Time) (map[string]int, time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	ops := map[string]int{}
	var first time.Time
	for i, e := range o.events {
		if o.at[i].Before(t) {
			continue
		}
		if first.IsZero() {
			first = o.at[i]
		}
		ops[e.Op]++
	}
	return ops, first
}

var quiet = slog.New(slog.DiscardHandler)

// TestRunOverAClosedPoolReturnsAnError: a pool closed under the store
// cannot come back: Run returns an error wrapping ErrClosed at once,
// rather than retrying until its ctx ends and returning nil.
func TestRunOverAClosedPoolReturnsAnError(t *testing.T) {
	testPool(t)
	pool, err := newPool(server)
	require.NoError(t, err)
	s := openStore(t, pool, freshQueue(), WithLogger(quiet))
	q := newQueue(t, s, durable.WithLogger(quiet))
	pool.Close()

	c, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	start := time.Now()
	err = q.Run(c, 2, func(context.Context, *durable.Delivery) error { return nil })
	require.ErrorIs(t, err, store.ErrClosed)
	assert.Contains(t, err.Error(), "closed pool")
	assert.Less(t, time.Since(start), 5*time.Second)

	_, err = q.Receive(c)
	require.ErrorIs(t, err, store.ErrClosed, "Receive too")
	require.NoError(t, c.Err())
}

// runOnOwnServer starts a server of the test's own and a queue on it with
// an Observer, running a handler that holds one message until release is
// closed (so the lease keeper extends it), with a short visibility
// timeout. It returns the server, the queue and the observer.
type outageRun struct {
	srv     *pgtest.Server
	q       *durable.Queue
	obs     *storeErrors
	started chan string
	release chan struct{}
	handled chan string
}

func startOutageRun(t *testing.T, opts ...durable.Option) *outageRun {
	t.Helper()
	srv := pgtest.ForTest(t)
	pool, err := newPool(srv)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	r := &outageRun{srv: srv, obs: &storeErrors{}, started: make(chan string, 16), release: make(chan struct{}),
		handled: make(chan string, 16)}
	s := openStore(t, pool, "q", WithLogger(quiet))
	r.q = newQueue(t, s, append([]durable.Option{durable.WithObserver(r.obs), durable.WithLogger(quiet),
		durable.WithVisibilityTimeout(3 * time.Second)}, opts...)...)
	require.NoError(t, r.q.Enqueue(ctx, msg("hold", time.Time{})))
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- r.q.Run(runCtx, 2, func(c context.Context, d *durable.Delivery) error {
			r.started <- d.ID
			if d.ID == "hold" {
				select {
				case <-r.release:
				case <-c.Done():
				}
			}
			r.handled <- d.ID
			return nil
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Error("Run did not return")
		}
	})
	select {
	case id := <-r.started:
		require.Equal(t, "hold", id)
	case <-time.After(20 * time.Second):
		t.Fatal("the first message was not handed out")
	}
	return r
}

// TestObserverSeesTheStoreErrorsOfAnOutage: pg_ctl stop -m immediate while
// Run runs: its failed calls (the lease keeper's extensions, the claim of
// a message that comes due) reach the Observer with their operation; once
// the server is back, Run goes on and delivers.
func TestObserverSeesTheStoreErrorsOfAnOutage(t *testing.T) {
	r := startOutageRun(t)
	require.NoError(t, r.q.Enqueue(ctx, msg("later", time.Now().Add(1500*time.Millisecond))))
	crash := time.Now()
	require.NoError(t, r.srv.Stop("immediate"))
	require.Eventually(t, func() bool {
		ops, _ := r.obs.since(crash)
		return ops[durable.OpExtend] >= 1 && ops[durable.OpClaim] >= 1
	}, 15*time.Second, 10*time.Millisecond, "the extensions and the claim fail, and the Observer hears it")
	ops, first := r.obs.since(crash)
	t.Logf("outage: errors by operation %v, the first %v after the crash", ops, first.Sub(crash).Round(time.Millisecond))

	require.NoError(t, r.srv.StartAgain())
	select {
	case id := <-r.started:
		assert.Equal(t, "later", id, "delivered once the server is back")
	case <-time.After(30 * time.Second):
		t.Fatal("nothing delivered after the server came back")
	}
	close(r.release)
}

// TestSIGSTOPpedServerGivesErrorsWithinTheBound: a server whose every
// process is stopped (SIGSTOP) answers nothing; Run's calls fail within
// WithStoreTimeout and the Observer hears them, instead of silence.
func TestSIGSTOPpedServerGivesErrorsWithinTheBound(t *testing.T) {
	const bound = 500 * time.Millisecond
	r := startOutageRun(t, durable.WithStoreTimeout(bound))
	require.NoError(t, r.q.Enqueue(ctx, msg("later", time.Now().Add(300*time.Millisecond))))
	frozen := time.Now()
	require.NoError(t, r.srv.Signal(syscall.SIGSTOP))
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			require.NoError(t, r.srv.Signal(syscall.SIGCONT))
		}
	}
	defer thaw()
	// The claim of "later", at 300ms, fails at 300ms+bound; the lease
	// keeper's extension, at most a second (visibility/3) after the
	// freeze, fails a bound later.
	require.Eventually(t, func() bool {
		ops, _ := r.obs.since(frozen)
		return ops[durable.OpClaim] >= 1 && ops[durable.OpExtend] >= 1
	}, 10*time.Second, 10*time.Millisecond)
	ops, first := r.obs.since(frozen)
	took := first.Sub(frozen)
	t.Logf("SIGSTOP: first error %v after the freeze (bound %v); errors by operation %v", took.Round(time.Millisecond), bound, ops)
	assert.Less(t, took, time.Second+bound+2*time.Second, "within the bound, with slack for a loaded machine")
	r.obs.mu.Lock()
	for _, e := range r.obs.events {
		assert.ErrorIs(t, e.Err, context.DeadlineExceeded, "%s: %v", e.Op, e.Err)
	}
	r.obs.mu.Unlock()

	thaw()
	select {
	case id := <-r.started:
		assert.Equal(t, "later", id, "delivered once the server runs again")
	case <-time.After(30 * time.Second):
		t.Fatal("nothing delivered after SIGCONT")
	}
	close(r.release)
}
