package durable

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable/memstore"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// crashStore is a store whose process dies on kill: from then on none of
// its calls reaches the store (each fails), and nothing it held is given
// back.
type crashStore struct {
	*memstore.Store
	dead atomic.Bool
}

var errDead = errors.New("the process is dead (test)")

func (c *crashStore) Claim(ctx context.Context, p store.ClaimParams) (store.Claimed, error) {
	if c.dead.Load() {
		return store.Claimed{}, errDead
	}
	return c.Store.Claim(ctx, p)
}

func (c *crashStore) Confirm(ctx context.Context, p store.ConfirmParams) error {
	if c.dead.Load() {
		return errDead
	}
	return c.Store.Confirm(ctx, p)
}

func (c *crashStore) Ack(ctx context.Context, l store.LeaseRef) error {
	if c.dead.Load() {
		return errDead
	}
	return c.Store.Ack(ctx, l)
}

func (c *crashStore) Retry(ctx context.Context, p store.RetryParams) error {
	if c.dead.Load() {
		return errDead
	}
	return c.Store.Retry(ctx, p)
}

func (c *crashStore) Extend(ctx context.Context, p store.ExtendParams) error {
	if c.dead.Load() {
		return errDead
	}
	return c.Store.Extend(ctx, p)
}

func (c *crashStore) Expired(ctx context.Context, limit int) (store.ExpiredLeases, error) {
	if c.dead.Load() {
		return store.ExpiredLeases{}, errDead
	}
	return c.Store.Expired(ctx, limit)
}

// holdAll claims as Run's dispatcher does with its one worker busy and a
// window of n, messages due later (see enqueueSoon): all held,
// registered with r's holder.
func holdAll(t *testing.T, q *Queue, r *runner, n int) []*Delivery {
	t.Helper()
	r.window = n
	r.pending.Store(1)
	ds, err := q.claimDue(context.Background(), r.claimSize)
	require.NoError(t, err)
	require.Len(t, ds, n)
	for _, d := range ds {
		require.True(t, d.held)
		r.waiting[d] = &waiting{}
	}
	return ds
}

// TestHeldLeasesAreShortKeptAndComeBackSoonAfterACrash: Run's worker is
// busy with a message handed out, on a lease of the visibility timeout
// (30s), and four more, claimed ahead of their due time, wait for it,
// held, on leases of HeldLease (2s),
// which Run extends while they wait (here for 10s). The process dies:
// nothing more reaches the store. Another queue on the store gets the
// four held messages within HeldLease of the crash, at attempt 1 with no
// LastError; the handed-out one stays in flight until its lease of the
// visibility timeout expires.
func TestHeldLeasesAreShortKeptAndComeBackSoonAfterACrash(t *testing.T) {
	const visibility = 30 * time.Second
	mock := clock.NewMock()
	mock.Set(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	mem := memstore.New(mock)
	s := &crashStore{Store: mem}
	q, err := New(s, WithClock(mock), withClaimAhead(time.Second), WithVisibilityTimeout(visibility), quietLogger())
	require.NoError(t, err)
	defer func() { assert.NoError(t, q.Close()) }()
	ctx := context.Background()
	enqueueDueNow(t, q, mock, "handed")
	enqueueSoon(t, q, mock, "h1", "h2", "h3", "h4")

	r := newRunner(ctx, q, nil, 1)
	handed, err := q.claimDue(ctx, r.claimSize) // the idle worker's
	require.NoError(t, err)
	require.Len(t, handed, 1)
	require.False(t, handed[0].held)
	handedAt := mock.Now()
	info, err := mem.Get(ctx, "handed")
	require.NoError(t, err)
	assert.Equal(t, handedAt.Add(visibility), info.Deadline, "a handed-out message: the visibility timeout")

	held := holdAll(t, q, r, 4)
	for _, d := range held {
		info, err := mem.Get(ctx, d.ID)
		require.NoError(t, err)
		assert.Equal(t, mock.Now().Add(heldAhead+HeldLease), info.Deadline, "%s: held, on a short lease from its due time", d.ID)
	}

	stopKeeping := r.keepWaiting()
	for range 15 { // 10s of waiting for the worker, in steps of the holder's period
		mock.Add(HeldLease / 3)
		want := mock.Now().Add(HeldLease)
		require.Eventually(t, func() bool {
			for _, d := range held {
				info, err := mem.Get(ctx, d.ID)
				if err != nil || !info.Deadline.Equal(want) {
					return false
				}
			}
			return true
		}, 5*time.Second, time.Millisecond, "the held leases are extended while they wait")
	}
	st, err := mem.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 5, st.InFlight, "none was reaped while held")

	s.dead.Store(true) // the crash
	crashedAt := mock.Now()

	other, err := New(mem, WithClock(mock), withClaimAhead(0), WithVisibilityTimeout(visibility), quietLogger())
	require.NoError(t, err)
	defer func() { assert.NoError(t, other.Close()) }()
	mock.Add(HeldLease)
	got := map[string]int{}
	for range 4 {
		d := receive(t, other)
		assert.Equal(t, 1, d.Attempt, d.ID)
		assert.Empty(t, d.LastError, d.ID)
		got[d.ID] = d.Attempt
		require.NoError(t, d.Ack(ctx))
	}
	assert.Equal(t, map[string]int{"h1": 1, "h2": 1, "h3": 1, "h4": 1}, got)
	assert.LessOrEqual(t, mock.Now().Sub(crashedAt), HeldLease, "back within HeldLease of the crash")

	info, err = mem.Get(ctx, "handed")
	require.NoError(t, err)
	assert.Equal(t, InFlight, info.State, "the handed-out message keeps its lease")
	assert.Equal(t, handedAt.Add(visibility), info.Deadline)
	stopKeeping()
}

// TestHeldLeaseIsExtendedToTheVisibilityTimeoutAtItsHandOut: the worker
// that takes a held message confirms it (a Cancel then finds it in
// flight), the confirmation moving its lease to the visibility timeout in
// the same write, before the handler starts; the holder extends it no
// more.
func TestHeldLeaseIsExtendedToTheVisibilityTimeoutAtItsHandOut(t *testing.T) {
	const visibility = 30 * time.Second
	mock := clock.NewMock()
	mock.Set(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	mem := memstore.New(mock)
	q, err := New(mem, WithClock(mock), withClaimAhead(time.Second), WithVisibilityTimeout(visibility), quietLogger())
	require.NoError(t, err)
	defer func() { assert.NoError(t, q.Close()) }()
	ctx := context.Background()
	enqueueSoon(t, q, mock, "a")

	var handled int
	r := newRunner(ctx, q, func(hctx context.Context, d *Delivery) error {
		handled++
		assert.Equal(t, 1, d.Attempt)
		assert.Equal(t, mock.Now().Add(visibility), d.Deadline)
		info, err := mem.Get(ctx, d.ID)
		require.NoError(t, err)
		assert.Equal(t, mock.Now().Add(visibility), info.Deadline, "extended in the store before the handler")
		_, err = mem.Cancel(ctx, d.ID)
		assert.ErrorIs(t, err, ErrInFlight, "confirmed: handed out")
		return nil
	}, 1)
	ds := holdAll(t, q, r, 1)
	mock.Add(time.Second) // it waited a while
	r.pending.Store(0)
	runWorker(r, ds...)
	assert.Equal(t, 1, handled)
	assert.Empty(t, r.waiting, "the keeper lets it go")
	assert.True(t, drained(t, q)())
}

// TestHeldMessageWhoseConfirmationFailsIsNotHandedOut: if the
// confirmation at the hand-out fails (the store is down), the handler does
// not start, and the lease is left as it was, short: it comes back when
// that expires, at no cost (see TestFailedConfirmationCostsNothing).
func TestHeldMessageWhoseConfirmationFailsIsNotHandedOut(t *testing.T) {
	mock := clock.NewMock()
	mock.Set(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	s := newFaultStore(mock)
	q, err := New(s, WithClock(mock), withClaimAhead(time.Second), quietLogger())
	require.NoError(t, err)
	defer func() { assert.NoError(t, q.Close()) }()
	ctx := context.Background()
	enqueueSoon(t, q, mock, "a")
	r := newRunner(ctx, q, func(context.Context, *Delivery) error {
		t.Error("the handler started on an unconfirmed lease")
		return nil
	}, 1)
	ds := holdAll(t, q, r, 1)
	mock.Add(heldAhead) // due
	s.set(OpConfirm, true, false)
	r.pending.Store(0)
	runWorker(r, ds...)
	info, err := q.Get(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, [2]any{InFlight, mock.Now().Add(q.cfg.heldLease()).UnixNano()}, [2]any{info.State, info.Deadline.UnixNano()},
		"held as it was, on its short lease")
}

// lostConfirmStore is a store whose every Confirm finds its lease lost, as
// when the message was replaced since the lease was taken.
type lostConfirmStore struct{ *memstore.Store }

func (lostConfirmStore) Confirm(context.Context, store.ConfirmParams) error {
	return store.ErrLeaseLost
}

// TestHeldMessageLostAtItsHandOutIsNoLeaseLostEvent: a held message whose
// lease is found lost when Run confirms it at its hand-out (it was replaced
// or cancelled while it waited) reached no handler, so Run reports
// no EventLeaseLost for it: that event speaks of a lease lost under a
// handler (an Ack refused), and a consumer counting refused acks by it
// would count one that never was.
func TestHeldMessageLostAtItsHandOutIsNoLeaseLostEvent(t *testing.T) {
	mock := clock.NewMock()
	mock.Set(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	var lost atomic.Int32
	q, err := New(lostConfirmStore{memstore.New(mock)}, WithClock(mock), withClaimAhead(time.Second), quietLogger(),
		WithObserver(ObserverFunc(func(e Event) {
			if e.Kind == EventLeaseLost {
				lost.Add(1)
			}
		})))
	require.NoError(t, err)
	defer func() { assert.NoError(t, q.Close()) }()
	enqueueSoon(t, q, mock, "a")
	r := newRunner(context.Background(), q, func(context.Context, *Delivery) error {
		t.Error("the handler started on a lost lease")
		return nil
	}, 1)
	ds := holdAll(t, q, r, 1)
	mock.Add(heldAhead) // due
	r.pending.Store(0)
	runWorker(r, ds...)
	assert.Zero(t, lost.Load(), "EventLeaseLost for a message no handler saw")
}
