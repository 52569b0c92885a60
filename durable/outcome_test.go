package durable

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable/memstore"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// memQueue returns a queue on a memstore (which keeps Kind, MaxAttempts
// and Timeout), on a mock clock, handing out at due times.
func memQueue(t *testing.T, opts ...Option) (*Queue, *clock.Mock) {
	t.Helper()
	mock := clock.NewMock()
	mock.Set(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	return memQueueOn(t, memstore.New(mock), mock, opts...), mock
}

// memQueueOn returns a queue on s and mock, closed by the test's cleanup.
func memQueueOn(t *testing.T, s Store, mock *clock.Mock, opts ...Option) *Queue {
	t.Helper()
	q, err := New(s, append([]Option{WithClock(mock), WithBackoff(fixedBackoff), withClaimAhead(0), quietLogger()}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, q.Close()) })
	return q
}

func TestPermanent(t *testing.T) {
	cause := errors.New("order o-1 does not exist")
	err := fmt.Errorf("closing: %w", Permanent(cause))
	assert.ErrorIs(t, err, ErrPermanent)
	assert.ErrorIs(t, err, cause)
	assert.Equal(t, "closing: order o-1 does not exist", err.Error())
	assert.Equal(t, ErrPermanent.Error(), Permanent(nil).Error())
	assert.ErrorIs(t, Permanent(nil), ErrPermanent)
	assert.NotErrorIs(t, cause, ErrPermanent)
}

func TestSnoozeOfNoDelayIsAnOrdinaryError(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		err := Snooze(d)
		require.Error(t, err)
		_, ok := snoozedFor(err)
		assert.False(t, ok, "Snooze(%v)", d)
	}
	rec := &recorder{}
	q, mock := memQueue(t, WithObserver(rec))
	require.NoError(t, q.Enqueue(context.Background(), Message{ID: "a", Kind: "k", Due: mock.Now()}))
	tried := make(chan int, 4)
	stop := runInBackground(t, q, 1, func(_ context.Context, d *Delivery) error {
		tried <- d.Attempt
		return Snooze(0)
	})
	select {
	case a := <-tried:
		assert.Equal(t, 1, a)
	case <-time.After(5 * time.Second):
		t.Fatal("no delivery")
	}
	require.Eventually(t, func() bool {
		info, err := q.Get(context.Background(), "a")
		return err == nil && info.State == Pending && info.LastError != ""
	}, 5*time.Second, time.Millisecond, "retried")
	require.NoError(t, stop())
	info, err := q.Get(context.Background(), "a")
	require.NoError(t, err)
	assert.Equal(t, 1, info.Attempt, "the attempt counts")
	assert.Equal(t, "durable: Snooze(0s): the delay must be positive", info.LastError)
	assert.Equal(t, mock.Now().Add(fixedBackoff(1)), info.Due, "after the back-off")
	for _, e := range rec.take() {
		assert.NotEqual(t, EventSnoozed, e.Kind)
	}
}

// TestSettle ends deliveries of Receive as Run would.
func TestSettle(t *testing.T) {
	q, mock := memQueue(t, WithMaxAttempts(3))
	ctx := context.Background()
	ids := []string{"ok", "permanent", "wraps-permanent", "permanent-snooze", "snooze", "fails"}
	for i, id := range ids {
		require.NoError(t, q.Enqueue(ctx, Message{ID: id, Kind: "k", Due: mock.Now().Add(time.Duration(i) * time.Nanosecond)}))
	}
	mock.Add(time.Duration(len(ids)) * time.Nanosecond)
	now := mock.Now()
	settle := map[string]error{
		"ok":               nil,
		"permanent":        Permanent(errors.New("order gone")),
		"wraps-permanent":  fmt.Errorf("order gone: %w", ErrPermanent),
		"permanent-snooze": Permanent(Snooze(time.Hour)),
		"snooze":           fmt.Errorf("bank closed: %w", Snooze(time.Hour)),
		"fails":            errors.New("bank down"),
	}
	for range ids {
		d := receive(t, q)
		hctx, cancel := d.AttemptContext(ctx)
		_, hasDeadline := hctx.Deadline()
		cancel()
		assert.False(t, hasDeadline, "no Timeout, no deadline")
		require.NoError(t, d.Settle(ctx, settle[d.ID]), d.ID)
	}
	info := func(id string) Info {
		i, err := q.Get(ctx, id)
		require.NoError(t, err, id)
		return i
	}
	_, err := q.Get(ctx, "ok")
	require.ErrorIs(t, err, ErrNotFound, "acked")
	for id, text := range map[string]string{"permanent": "order gone", "wraps-permanent": "order gone: durable: permanent failure",
		"permanent-snooze": "durable: snoozed for 1h0m0s"} {
		i := info(id)
		assert.Equal(t, []any{Dead, 1, text}, []any{i.State, i.Attempt, i.LastError}, id)
	}
	i := info("snooze")
	assert.Equal(t, []any{Pending, 0, "", now.Add(time.Hour)}, []any{i.State, i.Attempt, i.LastError, i.Due}, "snoozed")
	i = info("fails")
	assert.Equal(t, []any{Pending, 1, "bank down", now.Add(fixedBackoff(1))}, []any{i.State, i.Attempt, i.LastError, i.Due}, "retried")
}

// TestTimeoutAndRunShutdown: a handler whose Timeout passed failed its
// attempt even if Run's ctx ended before it returned its ctx's error; one
// stopped by Run's shutdown before its Timeout gives its attempt back.
func TestTimeoutAndRunShutdown(t *testing.T) {
	q, mock := memQueue(t, WithMaxAttempts(1))
	ctx := context.Background()
	require.NoError(t, q.Enqueue(ctx,
		Message{ID: "outlived", Kind: "k", Due: mock.Now(), Timeout: 5 * time.Second},
		Message{ID: "stopped", Kind: "k", Due: mock.Now(), Timeout: time.Hour}))
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	started := make(chan string, 2)
	ended := make(chan error, 1)
	done := make(chan error, 1)
	go func() {
		done <- q.Run(runCtx, 2, func(hctx context.Context, d *Delivery) error {
			started <- d.ID
			select {
			case <-hctx.Done():
			case <-time.After(30 * time.Second):
				return errors.New("the handler's ctx did not end")
			}
			if d.ID == "outlived" {
				ended <- hctx.Err()
				<-runCtx.Done() // returns after Run's ctx ended too
			}
			return hctx.Err()
		})
	}()
	for range 2 {
		select {
		case <-started:
		case <-time.After(5 * time.Second):
			t.Fatal("the handlers did not start")
		}
	}
	mock.Add(5 * time.Second)
	select {
	case err := <-ended:
		require.ErrorIs(t, err, context.DeadlineExceeded)
	case <-time.After(5 * time.Second):
		t.Fatal("the ctx of outlived did not end at its Timeout")
	}
	stopRun()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	outlived, err := q.Get(ctx, "outlived")
	require.NoError(t, err)
	assert.Equal(t, []any{Dead, 1, context.DeadlineExceeded.Error()}, []any{outlived.State, outlived.Attempt, outlived.LastError},
		"its attempt failed: the last of one")
	stopped, err := q.Get(ctx, "stopped")
	require.NoError(t, err)
	assert.Equal(t, []any{Pending, 0, ""}, []any{stopped.State, stopped.Attempt, stopped.LastError}, "given back")
}

// TestEventsCarryTheMessageKind: every event about one message says its
// kind, EventStoreError and EventSnoozed too.
func TestEventsCarryTheMessageKind(t *testing.T) {
	mock := clock.NewMock()
	mock.Set(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	s := newFaultStore(mock)
	rec := &recorder{}
	q := memQueueOn(t, s, mock, WithObserver(rec))
	ctx := context.Background()
	require.NoError(t, q.Enqueue(ctx, Message{ID: "a", Kind: "k.a", Due: mock.Now()}))
	d := receive(t, q)
	s.set(OpAck, true, false)
	require.ErrorIs(t, d.Ack(ctx), errTransient)
	s.set(OpAck, false, false)
	require.NoError(t, d.Settle(ctx, Snooze(time.Minute)))
	mock.Add(time.Minute)
	d = receive(t, q)
	require.NoError(t, d.Settle(ctx, Permanent(errors.New("no"))))
	assert.Equal(t, []Event{
		{Kind: EventEnqueued, ID: "a", MessageKind: "k.a", N: 1},
		{Kind: EventDelivered, ID: "a", MessageKind: "k.a", N: 1, Attempt: 1},
		{Kind: EventStoreError, ID: "a", MessageKind: "k.a", N: 1, Attempt: 1, Op: OpAck, Err: errTransient},
		{Kind: EventSnoozed, ID: "a", MessageKind: "k.a", N: 1, Attempt: 1},
		{Kind: EventDelivered, ID: "a", MessageKind: "k.a", N: 1, Attempt: 1},
		{Kind: EventDead, ID: "a", MessageKind: "k.a", N: 1, Attempt: 1},
	}, rec.take())
}

// TestReapUsesTheMessagesMaxAttempts: Reap, without a queue, kills by
// each lease's MaxAttempts, and by the policy's for one without.
func TestReapUsesTheMessagesMaxAttempts(t *testing.T) {
	mock := clock.NewMock()
	s := memstore.New(mock)
	ctx := context.Background()
	require.NoError(t, s.Enqueue(ctx, []store.Message{{ID: "own", MaxAttempts: 1}, {ID: "policy"}}))
	c, err := s.Claim(ctx, store.ClaimParams{Limit: 2, Lease: time.Second})
	require.NoError(t, err)
	require.Len(t, c.Leases, 2)
	mock.Add(time.Second)
	r, err := Reap(ctx, s, 10, RetryPolicy{MaxAttempts: 2})
	require.NoError(t, err)
	assert.Equal(t, []int{1, 1}, []int{r.Dead, r.Returned})
	own, err := s.Get(ctx, "own")
	require.NoError(t, err)
	assert.Equal(t, store.Dead, own.State)
}
