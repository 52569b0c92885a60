package durable

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable/memstore"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// faultStore is a store (a memstore) whose calls fail or hang on demand:
// fail makes the named operations return errTransient; hang makes them
// block until their ctx ends.
type faultStore struct {
	*memstore.Store
	mu   sync.Mutex
	fail map[string]bool
	hang map[string]bool
	// calls counts the calls of each operation.
	calls map[string]int
}

var errTransient = errors.New("connection refused (test)")

func newFaultStore(c clock.Clock) *faultStore {
	return &faultStore{Store: memstore.New(c), fail: map[string]bool{}, hang: map[string]bool{}, calls: map[string]int{}}
}

func (f *faultStore) set(op string, fail, hang bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[op], f.hang[op] = fail, hang
}

// fault applies the faults set for op.
func (f *faultStore) fault(ctx context.Context, op string) error {
	f.mu.Lock()
	f.calls[op]++
	fail, hang := f.fail[op], f.hang[op]
	f.mu.Unlock()
	switch {
	case hang:
		<-ctx.Done()
		return ctx.Err()
	case fail:
		return errTransient
	}
	return nil
}

func (f *faultStore) Claim(ctx context.Context, p store.ClaimParams) (store.Claimed, error) {
	if err := f.fault(ctx, OpClaim); err != nil {
		return store.Claimed{}, err
	}
	return f.Store.Claim(ctx, p)
}

func (f *faultStore) Confirm(ctx context.Context, p store.ConfirmParams) error {
	if err := f.fault(ctx, OpConfirm); err != nil {
		return err
	}
	return f.Store.Confirm(ctx, p)
}

func (f *faultStore) Ack(ctx context.Context, l store.LeaseRef) error {
	if err := f.fault(ctx, OpAck); err != nil {
		return err
	}
	return f.Store.Ack(ctx, l)
}

func (f *faultStore) Retry(ctx context.Context, p store.RetryParams) error {
	if err := f.fault(ctx, OpRetry); err != nil {
		return err
	}
	return f.Store.Retry(ctx, p)
}

func (f *faultStore) Extend(ctx context.Context, p store.ExtendParams) error {
	if err := f.fault(ctx, OpExtend); err != nil {
		return err
	}
	return f.Store.Extend(ctx, p)
}

func (f *faultStore) Expired(ctx context.Context, limit int) (store.ExpiredLeases, error) {
	if err := f.fault(ctx, OpReap); err != nil {
		return store.ExpiredLeases{}, err
	}
	return f.Store.Expired(ctx, limit)
}

// eventLog is an Observer that keeps the store errors it hears.
type eventLog struct {
	mu     sync.Mutex
	errors []Event
}

func (l *eventLog) Observe(e Event) {
	if e.Kind == EventStoreError {
		l.mu.Lock()
		l.errors = append(l.errors, e)
		l.mu.Unlock()
	}
}

// ops returns how many store errors of each operation were heard.
func (l *eventLog) ops() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for _, e := range l.errors {
		out[e.Op]++
	}
	return out
}

func quietLogger() Option { return WithLogger(slog.New(slog.DiscardHandler)) }

func TestRunReturnsTheErrorOfAStoreThatCannotComeBack(t *testing.T) {
	mock := clock.NewMock()
	s := memstore.New(mock)
	events := &eventLog{}
	q, err := New(s, WithClock(mock), withClaimAhead(0), quietLogger(), WithObserver(events))
	require.NoError(t, err)
	defer func() { assert.NoError(t, q.Close()) }()
	require.NoError(t, s.Close()) // the pool, or the client, closed under the queue

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = q.Run(ctx, 2, func(context.Context, *Delivery) error { return nil })
	require.ErrorIs(t, err, ErrClosed)
	require.NoError(t, ctx.Err(), "Run returned before its ctx ended")
	assert.Equal(t, map[string]int{OpClaim: 1}, events.ops(), "the error reaches the Observer too")

	_, err = q.Receive(ctx)
	require.ErrorIs(t, err, ErrClosed, "and so does Receive")
	require.NoError(t, ctx.Err())
}

// closedPoolStore answers every claim as a store whose pool was closed
// does: an error wrapping store.ErrClosed and the driver's own.
type closedPoolStore struct{ *memstore.Store }

var errClosedPool = errors.New("closed pool")

func (closedPoolStore) Claim(context.Context, store.ClaimParams) (store.Claimed, error) {
	return store.Claimed{}, errors.Join(store.ErrClosed, errClosedPool)
}

func TestRunReturnsAClosedPoolsError(t *testing.T) {
	mock := clock.NewMock()
	q, err := New(closedPoolStore{memstore.New(mock)}, WithClock(mock), quietLogger())
	require.NoError(t, err)
	defer func() { assert.NoError(t, q.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = q.Run(ctx, 1, func(context.Context, *Delivery) error { return nil })
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, err, errClosedPool)
}

func TestTransientStoreErrorsReachTheObserverAndAreRetried(t *testing.T) {
	mock := clock.NewMock()
	mock.Set(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	s := newFaultStore(mock)
	events := &eventLog{}
	q, err := New(s, WithClock(mock), withClaimAhead(0), quietLogger(), WithObserver(events))
	require.NoError(t, err)
	defer func() { assert.NoError(t, q.Close()) }()
	enqueueDueNow(t, q, mock, "a")

	s.set(OpClaim, true, false)
	s.set(OpAck, true, false)
	var handled atomic.Int32
	stop := runInBackground(t, q, 1, func(context.Context, *Delivery) error {
		handled.Add(1)
		return nil
	})
	// Each failed claim is an event, and waits its back-off on the
	// queue's clock.
	require.Eventually(t, func() bool {
		mock.Add(100 * time.Millisecond)
		return events.ops()[OpClaim] >= 3
	}, 5*time.Second, time.Millisecond)
	s.set(OpClaim, false, false)
	require.Eventually(t, func() bool {
		mock.Add(time.Second) // the pending back-off
		return handled.Load() == 1 && events.ops()[OpAck] == 1
	}, 5*time.Second, time.Millisecond, "claims go on after the outage; the failed ack is an event")
	require.NoError(t, stop())

	events.mu.Lock()
	defer events.mu.Unlock()
	for _, e := range events.errors {
		require.ErrorIs(t, e.Err, errTransient)
		if e.Op == OpAck {
			assert.Equal(t, "a", e.ID)
			assert.Equal(t, 1, e.Attempt)
		}
	}
}

// TestHungStoreShowsAsErrorsWithinTheBound: a store whose calls never
// answer gives, within WithStoreTimeout, an error event for each of Run's
// calls (claim; the lease keeper's extend; the ack), not silence.
func TestHungStoreShowsAsErrorsWithinTheBound(t *testing.T) {
	const bound = 50 * time.Millisecond
	mock := clock.NewMock()
	mock.Set(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	s := newFaultStore(mock)
	events := &eventLog{}
	q, err := New(s, WithClock(mock), withClaimAhead(0), quietLogger(), WithObserver(events),
		WithStoreTimeout(bound), WithVisibilityTimeout(30*time.Second))
	require.NoError(t, err)
	defer func() { assert.NoError(t, q.Close()) }()
	enqueueDueNow(t, q, mock, "a")

	// The claim hangs: an error within the bound.
	s.set(OpClaim, false, true)
	release := make(chan struct{})
	started := make(chan struct{})
	begin := time.Now() // before Run starts, so before its claim does
	stop := runInBackground(t, q, 1, func(ctx context.Context, d *Delivery) error {
		close(started)
		<-release
		return nil
	})
	require.Eventually(t, func() bool { return events.ops()[OpClaim] >= 1 }, 5*time.Second, time.Millisecond)
	took := time.Since(begin)
	assert.Less(t, took, bound+2*time.Second, "the hung claim shows within the bound (loaded machine: slack)")
	assert.GreaterOrEqual(t, took, bound, "not before the bound")

	// The store answers claims again; then the extend and the ack hang.
	s.set(OpClaim, false, false)
	s.set(OpExtend, false, true)
	s.set(OpAck, false, true)
	require.Eventually(t, func() bool {
		select {
		case <-started:
			return true
		default:
			mock.Add(100 * time.Millisecond) // the claim's back-off
			return false
		}
	}, 5*time.Second, 5*time.Millisecond)
	mock.Add(10 * time.Second) // the lease keeper's tick: a third of the visibility timeout
	require.Eventually(t, func() bool { return events.ops()[OpExtend] >= 1 }, 5*time.Second, time.Millisecond)
	close(release)
	require.Eventually(t, func() bool { return events.ops()[OpAck] >= 1 }, 5*time.Second, time.Millisecond)
	require.NoError(t, stop())
	for _, e := range events.errors {
		assert.ErrorIs(t, e.Err, context.DeadlineExceeded, "%s", e.Op)
	}
}

func TestStoreTimeoutDefault(t *testing.T) {
	c := defaultConfig()
	assert.Equal(t, 5*time.Second, c.callTimeout(), "min(5s, 30s/4)")
	c.visibility = 8 * time.Second
	assert.Equal(t, 2*time.Second, c.callTimeout(), "a quarter of a short visibility timeout")
	c.storeTimeout = time.Second
	assert.Equal(t, time.Second, c.callTimeout())
	c.storeTimeout = -1
	assert.Error(t, c.validate())
}

func TestDefaultLoggerIsSlogDefault(t *testing.T) {
	mock := clock.NewMock()
	q, err := New(memstore.New(mock), WithClock(mock))
	require.NoError(t, err)
	defer func() { assert.NoError(t, q.Close()) }()
	assert.Same(t, slog.Default(), q.log)
}
