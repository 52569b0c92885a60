package durable

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// claimRecorder is a Store that records the limit of each Claim, and can
// hold Acks until told to go on.
type claimRecorder struct {
	Store
	mu       sync.Mutex
	limits   []int
	holdAcks chan struct{} // nil: acks go through
	acking   chan string   // told of each Ack held
	extends  atomic.Int64
	confirms atomic.Int64
}

func (s *claimRecorder) Confirm(ctx context.Context, p store.ConfirmParams) error {
	s.confirms.Add(1)
	return s.Store.Confirm(ctx, p)
}

func (s *claimRecorder) Extend(ctx context.Context, p store.ExtendParams) error {
	s.extends.Add(1)
	return s.Store.Extend(ctx, p)
}

func (s *claimRecorder) Claim(ctx context.Context, p ClaimParams) (Claimed, error) {
	s.mu.Lock()
	s.limits = append(s.limits, p.Limit)
	s.mu.Unlock()
	return s.Store.Claim(ctx, p)
}

func (s *claimRecorder) Ack(ctx context.Context, l store.LeaseRef) error {
	if s.holdAcks != nil {
		if s.acking != nil {
			s.acking <- l.ID
		}
		<-s.holdAcks
	}
	return s.Store.Ack(ctx, l)
}

func (s *claimRecorder) claimLimits() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.limits...)
}

func recordedQueue(t *testing.T, opts ...Option) (*Queue, *clock.Mock, *claimRecorder) {
	t.Helper()
	mock := clock.NewMock()
	mock.Set(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC))
	bolt, err := OpenBoltStore(filepath.Join(t.TempDir(), "queue.db"), WithClock(mock))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, bolt.Close()) })
	store := &claimRecorder{Store: bolt}
	q, err := New(store, append([]Option{WithClock(mock), withClaimAhead(0)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, q.Close()) })
	return q, mock, store
}

func TestRunClaimsForAllItsIdleWorkersAtOnce(t *testing.T) {
	q, mock, store := recordedQueue(t)
	ids := make([]string, 20)
	for i := range ids {
		ids[i] = fmt.Sprintf("m%02d", i)
	}
	enqueueDueNow(t, q, mock, ids...)
	stop := runInBackground(t, q, 8, func(context.Context, *Delivery) error { return nil })
	require.Eventually(t, drained(t, q), 5*time.Second, time.Millisecond)
	require.NoError(t, stop())
	limits := store.claimLimits()
	require.NotEmpty(t, limits)
	assert.Equal(t, 8, limits[0], "the first claim is for the 8 idle workers, in one store call")
	assert.Less(t, len(limits), len(ids), "claims carry several messages")
}

func TestRunWritesAcksInTheBackgroundAndReturnsAfterThem(t *testing.T) {
	q, mock, store := recordedQueue(t)
	store.holdAcks = make(chan struct{})
	store.acking = make(chan string, 2)
	enqueueDueNow(t, q, mock, "a", "b")
	handled := make(chan string, 2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	result := make(chan error, 1)
	go func() {
		result <- q.Run(ctx, 1, func(_ context.Context, d *Delivery) error {
			handled <- d.ID
			return nil
		})
	}()
	// One worker handles both while the first ack is held: the worker
	// does not wait for it.
	first, second := <-handled, <-handled
	assert.Equal(t, []string{"a", "b"}, []string{first, second})
	assert.Equal(t, "a", <-store.acking)
	cancel()
	select {
	case err := <-result:
		t.Fatalf("Run returned (%v) with acks not written", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(store.holdAcks)
	require.NoError(t, <-result)
	assert.True(t, drained(t, q)(), "both acks written when Run returned")
}

func TestRunHoldsAtMost256AcksWaiting(t *testing.T) {
	q, mock, store := recordedQueue(t)
	store.holdAcks = make(chan struct{})
	const n = maxPendingAcks + 10
	msgs := make([]Message, n)
	for i := range msgs {
		msgs[i] = Message{ID: fmt.Sprintf("m%03d", i), Due: mock.Now()}
	}
	require.NoError(t, store.Enqueue(context.Background(), msgs))
	var handled atomic.Int32
	stop := runInBackground(t, q, 1, func(context.Context, *Delivery) error {
		handled.Add(1)
		return nil
	})
	// The worker handles 256 whose acks wait, and one more, whose ack
	// waits for room.
	require.Eventually(t, func() bool { return handled.Load() == maxPendingAcks+1 }, 5*time.Second, time.Millisecond)
	time.Sleep(20 * time.Millisecond) // room for a wrong handler to run
	assert.Equal(t, int32(maxPendingAcks+1), handled.Load())
	close(store.holdAcks)
	require.Eventually(t, drained(t, q), 5*time.Second, time.Millisecond)
	require.NoError(t, stop())
	assert.Equal(t, int32(n), handled.Load())
}

// runWorker has one worker of r take ds, as if its dispatcher had claimed
// them, and returns once it is done with them and their acks are written.
func runWorker(r *runner, ds ...*Delivery) {
	r.pending.Add(int64(len(ds)))
	for _, d := range ds {
		r.jobs <- d
	}
	close(r.jobs)
	r.work()
	r.acks.Wait()
}

func TestRunGivesBackClaimedMessagesNoWorkerStarted(t *testing.T) {
	q, mock, _ := testQueue(t)
	enqueueDueNow(t, q, mock, "a", "b")
	ds, err := q.claimDue(context.Background(), func() (int, int) { return 2, 0 })
	require.NoError(t, err)
	require.Len(t, ds, 2)

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Run's ctx ended with both waiting for a worker
	r := newRunner(ctx, q, func(context.Context, *Delivery) error {
		t.Error("a handler ran after Run's ctx ended")
		return nil
	}, 1)
	runWorker(r, ds...)
	st, err := q.Stats(context.Background())
	require.NoError(t, err)
	assert.Equal(t, [2]int{2, 0}, [2]int{st.Pending, st.InFlight}, "both pending again")
	d := receive(t, q)
	assert.Equal(t, "a", d.ID, "due as before, in the same order")
	assert.Equal(t, 1, d.Attempt, "the attempt claimed is taken back: no handler saw it")
	assert.Empty(t, d.LastError)
}

func TestRunExtendsALeaseThatWaitedBeforeItsHandlerStarts(t *testing.T) {
	const visibility = 30 * time.Second
	q, mock, _ := testQueue(t, WithVisibilityTimeout(visibility))
	enqueueDueNow(t, q, mock, "a")
	ds, err := q.claimDue(context.Background(), func() (int, int) { return 1, 0 })
	require.NoError(t, err)
	mock.Add(visibility / 2) // waited half its lease for a worker

	var deadline time.Time
	r := newRunner(context.Background(), q, func(_ context.Context, d *Delivery) error {
		deadline = d.Deadline
		info, err := q.Get(context.Background(), d.ID)
		require.NoError(t, err)
		assert.WithinDuration(t, mock.Now().Add(visibility), info.Deadline, 0, "extended in the store before the handler")
		return nil
	}, 1)
	runWorker(r, ds...)
	assert.WithinDuration(t, mock.Now().Add(visibility), deadline, 0)
	assert.True(t, drained(t, q)())
}

func TestRunDoesNotStartAHandlerOnALeaseLostWhileItWaited(t *testing.T) {
	const visibility = 30 * time.Second
	q, mock, _ := testQueue(t, WithVisibilityTimeout(visibility))
	enqueueDueNow(t, q, mock, "a")
	ds, err := q.claimDue(context.Background(), func() (int, int) { return 1, 0 })
	require.NoError(t, err)
	mock.Add(visibility / 2)
	require.NoError(t, q.Enqueue(context.Background(), Message{ID: "a", Payload: []byte("v2"), Due: mock.Now().Add(time.Hour)}))

	r := newRunner(context.Background(), q, func(context.Context, *Delivery) error {
		t.Error("the handler ran on a replaced message")
		return nil
	}, 1)
	runWorker(r, ds...)
	info, err := q.Get(context.Background(), "a")
	require.NoError(t, err)
	assert.Equal(t, "v2", string(info.Payload))
	assert.Equal(t, Pending, info.State)
}

func TestRunWindowFollowsTheHandlersPace(t *testing.T) {
	r := newRunner(context.Background(), nil, nil, 8)
	assert.Equal(t, 8, r.demand(), "idle: one for each worker")
	r.adjustWindow(5) // quick handlers: 5 done during a claim
	assert.Equal(t, 20, r.window, "four times as many")
	r.pending.Store(20)
	assert.Equal(t, 0, r.demand(), "8 in hand and 12 waiting: no claim yet")
	r.pending.Store(17)
	assert.Equal(t, 11, r.demand(), "half the window taken: claim for workers plus window")
	r.adjustWindow(100)
	assert.Equal(t, 8*prefetchPerWorker, r.window, "bounded")
	for range 20 {
		r.adjustWindow(0) // slow handlers: none done during a claim
	}
	assert.Equal(t, 0, r.window, "nothing waits for slow handlers")
	r.pending.Store(7)
	assert.Equal(t, 1, r.demand(), "one worker free: claim one")
	r.pending.Store(8)
	assert.Equal(t, 0, r.demand())
}

// TestRunHoldsWhatWaitsForAWorker claims as Run's dispatcher does with its
// one worker busy and a window of 4, messages due soon: the 4 are claimed
// ahead and held, so that an Enqueue or a Cancel from another queue on the
// store, returning while they wait in Run, wins: the cancelled message and
// the replaced version are never handed to the handler.
func TestRunHoldsWhatWaitsForAWorker(t *testing.T) {
	q, mock, store := recordedQueue(t, withClaimAhead(time.Second))
	other, err := New(store.Store, WithClock(mock), withClaimAhead(0))
	require.NoError(t, err)
	defer other.Close()
	enqueueSoon(t, q, mock, "a", "b", "c", "d")

	var handled []string
	r := newRunner(context.Background(), q, func(_ context.Context, d *Delivery) error {
		handled = append(handled, d.ID+"="+string(d.Payload))
		return nil
	}, 1)
	r.window = 4
	r.pending.Store(1) // the worker is busy
	n, held := r.claimSize()
	require.Equal(t, [2]int{4, 4}, [2]int{n, held}, "no worker idle: all for later")
	ds, err := q.claimDue(context.Background(), r.claimSize)
	require.NoError(t, err)
	require.Len(t, ds, 4)
	for _, d := range ds {
		require.True(t, d.held, "%s: claimed ahead for later: held", d.ID)
	}

	found, err := other.Cancel(context.Background(), "a")
	require.NoError(t, err, "a message waiting in Run was handed to no handler")
	assert.True(t, found)
	require.NoError(t, other.Enqueue(context.Background(), Message{ID: "b", Payload: []byte("v2"), Due: mock.Now()}))

	mock.Add(heldAhead) // due
	r.pending.Store(0)
	runWorker(r, ds...)
	assert.Equal(t, []string{"c=c", "d=d"}, handled)
	_, err = q.Get(context.Background(), "a")
	require.ErrorIs(t, err, ErrNotFound)
	info, err := q.Get(context.Background(), "b")
	require.NoError(t, err)
	assert.Equal(t, [3]any{Pending, "v2", 0}, [3]any{info.State, string(info.Payload), info.Attempt})
}

// TestRunHandsOutDueMessagesItClaimsForLater: messages already due when
// Run claims them for its busy worker are handed out by the claim, on
// leases of the visibility timeout: a Cancel from another queue finds
// them in flight, and the worker takes each with no store call (no
// Confirm, no Extend).
func TestRunHandsOutDueMessagesItClaimsForLater(t *testing.T) {
	const visibility = time.Minute
	q, mock, rec := recordedQueue(t, WithVisibilityTimeout(visibility))
	other, err := New(rec.Store, WithClock(mock), withClaimAhead(0))
	require.NoError(t, err)
	defer other.Close()
	enqueueDueNow(t, q, mock, "a", "b", "c", "d")

	var handled []string
	r := newRunner(context.Background(), q, func(_ context.Context, d *Delivery) error {
		handled = append(handled, d.ID)
		return nil
	}, 1)
	r.window = 4
	r.pending.Store(1) // the worker is busy
	ds, err := q.claimDue(context.Background(), r.claimSize)
	require.NoError(t, err)
	require.Len(t, ds, 4)
	for _, d := range ds {
		assert.False(t, d.held || d.ahead, "%s: due, handed out by the claim", d.ID)
		assert.Equal(t, mock.Now().Add(visibility), d.Deadline, "%s: the visibility timeout", d.ID)
	}
	_, err = other.Cancel(context.Background(), "a")
	require.ErrorIs(t, err, ErrInFlight, "handed out by the claim")

	mock.Add(time.Second) // they waited a while
	r.pending.Store(0)
	runWorker(r, ds...)
	assert.Equal(t, []string{"a", "b", "c", "d"}, handled)
	assert.Zero(t, rec.confirms.Load(), "no Confirm")
	assert.Zero(t, rec.extends.Load(), "no Extend")
	assert.True(t, drained(t, q)())
}

// TestRunKeepsTheLeasesOfMessagesWaitingBehindALongHandler: messages
// the claim handed out for a busy worker wait in Run on leases of the
// visibility timeout, which Run extends by as much once a third of it has
// passed, so that a handler running longer than the visibility timeout
// (its own lease kept alive) does not get the messages behind it reaped:
// each reaches its handler at the attempt of its claim. One replaced
// meanwhile (its lease lost) reaches no handler, and its new version
// stays pending.
func TestRunKeepsTheLeasesOfMessagesWaitingBehindALongHandler(t *testing.T) {
	const visibility = 30 * time.Second
	ctx := context.Background()
	q, mock, rec := recordedQueue(t, WithVisibilityTimeout(visibility), WithMaxAttempts(1), quietLogger())
	other, err := New(rec.Store, WithClock(mock), withClaimAhead(0))
	require.NoError(t, err)
	defer other.Close()
	enqueueDueNow(t, q, mock, "a", "b", "c")

	var handled []string
	r := newRunner(ctx, q, func(_ context.Context, d *Delivery) error {
		handled = append(handled, fmt.Sprintf("%s@%d", d.ID, d.Attempt))
		return nil
	}, 1)
	r.window = 4
	r.pending.Store(1) // the worker is busy with a long handler
	ds, err := q.claimDue(ctx, r.claimSize)
	require.NoError(t, err)
	require.Len(t, ds, 3)
	for _, d := range ds {
		require.False(t, d.held, "%s: due, handed out by the claim", d.ID)
		r.waiting[d] = &waiting{}
	}
	stopKeeping := r.keepWaiting()
	require.NoError(t, other.Enqueue(ctx, Message{ID: "c", Payload: []byte("v2"), Due: mock.Now().Add(time.Hour)}))

	// The busy worker's handler runs 5 minutes, in steps of the keeper's
	// period.
	period := HeldLease / 3
	for range int(5 * time.Minute / period) {
		mock.Add(period)
		require.Eventually(t, func() bool {
			for _, id := range []string{"a", "b"} {
				info, err := q.Get(ctx, id)
				if err != nil || info.State != InFlight || info.Deadline.Sub(mock.Now()) <= visibility-visibility/3 {
					return false
				}
			}
			return true
		}, 5*time.Second, time.Millisecond, "the waiting leases are extended once a third of them has passed, never reaped")
	}
	stopKeeping()
	assert.Positive(t, rec.extends.Load())

	r.pending.Store(0)
	runWorker(r, ds...)
	assert.Equal(t, []string{"a@1", "b@1"}, handled)
	info, err := q.Get(ctx, "c")
	require.NoError(t, err)
	assert.Equal(t, [3]any{Pending, "v2", 0}, [3]any{info.State, string(info.Payload), info.Attempt})
}

func TestRunClaimsForIdleWorkersAndTheWindowAtOnce(t *testing.T) {
	r := newRunner(context.Background(), nil, nil, 8)
	r.window = 8
	r.pending.Store(3)
	n, held := r.claimSize()
	assert.Equal(t, [2]int{13, 8}, [2]int{n, held}, "the 5 idle workers' handed out and the window held, in one claim")
	r.pending.Store(8)
	n, held = r.claimSize()
	assert.Equal(t, [2]int{8, 8}, [2]int{n, held}, "no worker idle: the window, all held")
}

// TestRunHeldGetTheHandOutLeaseInTheirConfirmation claims as Run's
// dispatcher does with one of two workers idle and a window of 2: the
// first message is handed out by the claim on a lease of the visibility
// timeout, the two others are held on the short lease, and the
// confirmation that hands each out gives it the visibility timeout's
// lease in the same write: no Extend.
func TestRunHeldGetTheHandOutLeaseInTheirConfirmation(t *testing.T) {
	const visibility = time.Minute
	q, mock, rec := recordedQueue(t, WithVisibilityTimeout(visibility), withClaimAhead(time.Second))
	enqueueDueNow(t, q, mock, "a")
	enqueueSoon(t, q, mock, "b", "c")
	r := newRunner(context.Background(), q, func(context.Context, *Delivery) error { return nil }, 2)
	r.window = 2
	r.pending.Store(1) // one worker busy
	ds, err := q.claimDue(context.Background(), r.claimSize)
	require.NoError(t, err)
	require.Len(t, ds, 3)
	now := mock.Now()
	assert.Equal(t, [3]bool{false, true, true}, [3]bool{ds[0].held, ds[1].held, ds[2].held})
	assert.Equal(t, now.Add(visibility), ds[0].Deadline, "handed out by the claim: the visibility timeout")
	assert.Equal(t, now.Add(heldAhead+q.cfg.heldLease()), ds[1].Deadline, "held: the short lease, from its due time")

	mock.Add(time.Second)
	var deadlines []int64
	r.h = func(ctx context.Context, d *Delivery) error {
		info, err := q.Get(ctx, d.ID)
		if err != nil {
			return err
		}
		deadlines = append(deadlines, d.Deadline.UnixNano(), info.Deadline.UnixNano())
		return nil
	}
	r.pending.Store(0)
	runWorker(r, ds[1:]...)
	want := mock.Now().Add(visibility).UnixNano()
	assert.Equal(t, []int64{want, want, want, want}, deadlines, "each held message's lease, in the delivery and the store, the visibility timeout's from its confirmation")
	assert.Zero(t, rec.extends.Load(), "no Extend: the confirmation gave the lease")
}
