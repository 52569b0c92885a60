package durable

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel"
	"github.com/seed64e23a5c/timingwheel/internal/syncbuf"
)

// fixedBackoff is a back-off of attempt seconds, without jitter.
func fixedBackoff(attempt int) time.Duration { return time.Duration(attempt) * time.Second }

// testQueue opens a queue in a fresh file, on a mock clock set to a round
// date, and closes it at the end of the test. It claims at the due time,
// not ahead, unless opts say otherwise: the tests of claiming ahead are
// the ones that call withClaimAhead(claimAhead).

// withClaimAhead sets how early Receive claims.
func withClaimAhead(d time.Duration) Option { return func(c *config) { c.claimAhead = d } }

func testQueue(t *testing.T, opts ...Option) (*Queue, *clock.Mock, string) {
	t.Helper()
	mock := clock.NewMock()
	mock.Set(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	path := filepath.Join(t.TempDir(), "queue.db")
	q, err := Open(path, append([]Option{WithClock(mock), WithBackoff(fixedBackoff), withClaimAhead(0)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, q.Close()) })
	return q, mock, path
}

// noneDue asserts that nothing can be received now. Receive claims before
// it waits, so the short real timeout only bounds the wait: the mock clock
// does not move while it runs.
func noneDue(t *testing.T, q *Queue) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	d, err := q.Receive(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "received %+v", d)
}

// receive returns the next delivery, which must be due now.
func receive(t *testing.T, q *Queue) *Delivery {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d, err := q.Receive(ctx)
	require.NoError(t, err)
	return d
}

// waitingReceive starts a Receive and returns once it waits for a signal,
// so that what delivers to it is the queue's timer.
func waitingReceive(t *testing.T, q *Queue) <-chan *Delivery {
	t.Helper()
	out := make(chan *Delivery, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		d, err := q.Receive(ctx)
		assert.NoError(t, err)
		out <- d
	}()
	require.Eventually(t, func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return q.waiting > 0
	}, 5*time.Second, time.Millisecond)
	return out
}

func stats(t *testing.T, q *Queue) Stats {
	t.Helper()
	st, err := q.Stats(context.Background())
	require.NoError(t, err)
	return st
}

func TestReceiveNeverBeforeDue(t *testing.T) {
	q, mock, _ := testQueue(t)
	ctx := context.Background()
	now := mock.Now()
	require.NoError(t, q.Enqueue(ctx, Message{ID: "a", Payload: []byte("A"), Due: now.Add(10 * time.Second)}))

	noneDue(t, q)
	mock.Add(10*time.Second - time.Nanosecond)
	noneDue(t, q)

	got := waitingReceive(t, q)
	mock.Add(time.Nanosecond)
	select {
	case d := <-got:
		require.NotNil(t, d)
		assert.Equal(t, "a", d.ID)
		assert.Equal(t, []byte("A"), d.Payload)
		assert.True(t, d.Due.Equal(now.Add(10*time.Second)), "due %v", d.Due)
		assert.Equal(t, 1, d.Attempt)
		assert.False(t, mock.Now().Before(d.Due))
		assert.True(t, d.Deadline.Equal(mock.Now().Add(30*time.Second)), "deadline %v", d.Deadline)
		require.NoError(t, d.Ack(ctx))
	case <-time.After(5 * time.Second):
		t.Fatal("the due timer did not wake the waiting receiver")
	}
	assert.Equal(t, Stats{}, stats(t, q))
}

func TestOrderByDueThenEnqueue(t *testing.T) {
	q, mock, _ := testQueue(t)
	ctx := context.Background()
	now := mock.Now()
	// Enqueued out of order; c, d and e share a due time.
	for _, m := range []struct {
		id  string
		due time.Duration
	}{{"c", 5}, {"b", 3}, {"d", 5}, {"a", 1}, {"e", 5}, {"zero", 0}} {
		due := now.Add(m.due * time.Second)
		if m.due == 0 {
			due = time.Time{} // now
		}
		require.NoError(t, q.Enqueue(ctx, Message{ID: m.id, Due: due}))
	}
	st := stats(t, q)
	assert.Equal(t, 6, st.Pending)
	assert.True(t, st.NextDue.Equal(now), "next due %v", st.NextDue)

	mock.Add(10 * time.Second)
	var order []string
	for range 6 {
		d := receive(t, q)
		order = append(order, d.ID)
		require.NoError(t, d.Ack(ctx))
	}
	assert.Equal(t, []string{"zero", "a", "b", "c", "d", "e"}, order)
	noneDue(t, q)
}

func TestEnqueueReplacesByID(t *testing.T) {
	q, mock, _ := testQueue(t)
	ctx := context.Background()
	now := mock.Now()
	require.NoError(t, q.Enqueue(ctx, Message{ID: "order-1", Payload: []byte("old"), Due: now.Add(5 * time.Second)}))
	require.NoError(t, q.Enqueue(ctx, Message{ID: "order-1", Payload: []byte("new"), Due: now.Add(20 * time.Second)}))
	assert.Equal(t, 1, stats(t, q).Pending)

	mock.Add(10 * time.Second)
	noneDue(t, q) // the old due time is gone
	mock.Add(10 * time.Second)
	d := receive(t, q)
	assert.Equal(t, []byte("new"), d.Payload)

	// Replacing a message in flight takes its lease away.
	require.NoError(t, q.Enqueue(ctx, Message{ID: "order-1", Payload: []byte("newer")}))
	require.ErrorIs(t, d.Ack(ctx), ErrLeaseLost)
	d2 := receive(t, q)
	assert.Equal(t, []byte("newer"), d2.Payload)
	assert.Equal(t, 1, d2.Attempt, "a replaced message counts its attempts from zero")
	require.NoError(t, d2.Ack(ctx))
	assert.Equal(t, Stats{}, stats(t, q))
}

func TestCancel(t *testing.T) {
	q, mock, _ := testQueue(t)
	ctx := context.Background()
	require.NoError(t, q.Enqueue(ctx, Message{ID: "a", Due: mock.Now().Add(time.Minute)}))
	require.NoError(t, q.Enqueue(ctx, Message{ID: "b"}))

	found, err := q.Cancel(ctx, "a")
	require.NoError(t, err)
	assert.True(t, found)
	found, err = q.Cancel(ctx, "a")
	require.NoError(t, err)
	assert.False(t, found)
	found, err = q.Cancel(ctx, "never")
	require.NoError(t, err)
	assert.False(t, found)

	d := receive(t, q)
	found, err = q.Cancel(ctx, "b")
	require.ErrorIs(t, err, ErrInFlight)
	assert.False(t, found)
	require.NoError(t, d.Ack(ctx))

	mock.Add(2 * time.Minute)
	noneDue(t, q)
	assert.Equal(t, Stats{}, stats(t, q))
}

func TestLeaseExpiryRedeliversAfterBackoff(t *testing.T) {
	q, mock, _ := testQueue(t, WithVisibilityTimeout(10*time.Second))
	ctx := context.Background()
	require.NoError(t, q.Enqueue(ctx, Message{ID: "a", Payload: []byte("x")}))
	first := receive(t, q)
	assert.Equal(t, 1, first.Attempt)
	assert.Equal(t, 1, stats(t, q).InFlight)

	got := waitingReceive(t, q)
	mock.Add(10 * time.Second) // the lease expires: back-off of attempt 1 is 1s
	require.Eventually(t, func() bool { return stats(t, q).Pending == 1 }, 5*time.Second, time.Millisecond,
		"the reaper did not end the expired lease")
	// The reaper arms the due timer after its store call: wait for it,
	// or the clock would move before the timer is armed.
	require.Eventually(t, func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return !q.dueAt.IsZero()
	}, 5*time.Second, time.Millisecond, "the due timer was not armed for the back-off")
	select {
	case d := <-got:
		t.Fatalf("delivered again before the back-off: %+v", d)
	default:
	}
	mock.Add(time.Second)
	var second *Delivery
	select {
	case second = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("not delivered again after the back-off")
	}
	assert.Equal(t, "a", second.ID)
	assert.Equal(t, 2, second.Attempt)

	require.ErrorIs(t, first.Ack(ctx), ErrLeaseLost, "a stale lease acks nothing")
	require.ErrorIs(t, first.Extend(ctx, time.Minute), ErrLeaseLost)
	require.ErrorIs(t, first.Retry(ctx, 0), ErrLeaseLost)
	assert.Equal(t, 1, stats(t, q).InFlight)
	require.NoError(t, second.Ack(ctx))
	assert.Equal(t, Stats{}, stats(t, q))
}

func TestAckAfterDeadlineWhileNotRedelivered(t *testing.T) {
	q, mock, _ := testQueue(t, WithVisibilityTimeout(time.Second))
	ctx := context.Background()
	require.NoError(t, q.Enqueue(ctx, Message{ID: "a"}))
	d := receive(t, q)
	q.reap.Stop() // hold the reaper: the lease is late but not taken over
	q.mu.Lock()
	q.reapAt = time.Time{}
	q.mu.Unlock()
	mock.Add(time.Minute)
	require.NoError(t, d.Ack(ctx))
	assert.Equal(t, Stats{}, stats(t, q))
}

func TestRetryBackoffThenDeadLetterThenRequeue(t *testing.T) {
	q, mock, _ := testQueue(t, WithMaxAttempts(3))
	ctx := context.Background()
	require.NoError(t, q.Enqueue(ctx, Message{ID: "poison", Payload: []byte("p")}))

	for attempt := 1; attempt <= 2; attempt++ {
		d := receive(t, q)
		require.Equal(t, attempt, d.Attempt)
		require.NoError(t, d.Retry(ctx, 0)) // back-off: attempt seconds
		mock.Add(time.Duration(attempt)*time.Second - time.Millisecond)
		noneDue(t, q)
		mock.Add(time.Millisecond)
	}
	d := receive(t, q)
	require.Equal(t, 3, d.Attempt)
	diedAt := mock.Now()
	require.NoError(t, d.Retry(ctx, 0))
	assert.Equal(t, Stats{Dead: 1}, stats(t, q))
	mock.Add(time.Hour)
	noneDue(t, q)

	dead, err := q.DeadLetters(ctx, 10)
	require.NoError(t, err)
	require.Len(t, dead, 1)
	assert.Equal(t, "poison", dead[0].ID)
	assert.Equal(t, []byte("p"), dead[0].Payload)
	assert.True(t, dead[0].Due.Equal(diedAt))

	require.ErrorIs(t, q.Requeue(ctx, "nope", time.Time{}), ErrNotFound)
	require.NoError(t, q.Requeue(ctx, "poison", mock.Now().Add(time.Second)))
	noneDue(t, q)
	mock.Add(time.Second)
	d = receive(t, q)
	assert.Equal(t, 1, d.Attempt, "a requeued message starts its attempts again")
	require.NoError(t, d.Ack(ctx))
	assert.Equal(t, Stats{}, stats(t, q))
}

func TestRetryWithExplicitDelay(t *testing.T) {
	q, mock, _ := testQueue(t)
	ctx := context.Background()
	require.NoError(t, q.Enqueue(ctx, Message{ID: "a"}))
	d := receive(t, q)
	require.NoError(t, d.Retry(ctx, time.Minute))
	mock.Add(time.Minute - time.Millisecond)
	noneDue(t, q)
	got := waitingReceive(t, q)
	mock.Add(time.Millisecond)
	select {
	case d = <-got:
		assert.Equal(t, 2, d.Attempt)
	case <-time.After(5 * time.Second):
		t.Fatal("not delivered after the retry delay")
	}
}

func TestLeaseExpiryAfterLastAttemptKills(t *testing.T) {
	q, mock, _ := testQueue(t, WithMaxAttempts(1), WithVisibilityTimeout(time.Second))
	ctx := context.Background()
	require.NoError(t, q.Enqueue(ctx, Message{ID: "a"}))
	receive(t, q)
	mock.Add(time.Second)
	require.Eventually(t, func() bool { return stats(t, q).Dead == 1 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, Stats{Dead: 1}, stats(t, q))
}

func TestExtendKeepsTheLease(t *testing.T) {
	q, mock, _ := testQueue(t, WithVisibilityTimeout(10*time.Second))
	ctx := context.Background()
	require.NoError(t, q.Enqueue(ctx, Message{ID: "a"}))
	d := receive(t, q)
	mock.Add(9 * time.Second)
	require.NoError(t, d.Extend(ctx, time.Minute))
	assert.True(t, d.Deadline.Equal(mock.Now().Add(time.Minute)))
	mock.Add(30 * time.Second) // past the first deadline
	noneDue(t, q)
	assert.Equal(t, 1, stats(t, q).InFlight)
	require.NoError(t, d.Ack(ctx))
}

func TestBadInputWritesNothing(t *testing.T) {
	q, _, _ := testQueue(t)
	ctx := context.Background()
	for _, m := range []Message{
		{ID: ""},
		{ID: strings.Repeat("x", MaxIDLen+1)},
		{ID: "big", Payload: make([]byte, MaxPayloadLen+1)},
	} {
		err := q.Enqueue(ctx, m)
		require.ErrorIs(t, err, ErrInvalidMessage)
		assert.Contains(t, err.Error(), "durable: invalid message: ")
	}
	require.NoError(t, q.Enqueue(ctx, Message{ID: strings.Repeat("x", MaxIDLen), Payload: make([]byte, MaxPayloadLen)}))
	assert.Equal(t, 1, stats(t, q).Pending)

	_, err := q.DeadLetters(ctx, 0)
	require.Error(t, err)

	_, err = Open(filepath.Join(t.TempDir(), "x.db"), WithMaxAttempts(0))
	require.ErrorContains(t, err, "max attempts")
	_, err = Open(filepath.Join(t.TempDir(), "x.db"), WithVisibilityTimeout(0))
	require.ErrorContains(t, err, "visibility timeout")
	_, err = New(nil)
	require.Error(t, err)
}

func TestClosedQueue(t *testing.T) {
	q, _, _ := testQueue(t)
	ctx := context.Background()
	require.NoError(t, q.Enqueue(ctx, Message{ID: "a"}))
	d := receive(t, q)

	waiting := make(chan error, 1)
	go func() { _, err := q.Receive(ctx); waiting <- err }()
	require.NoError(t, q.Close())
	require.ErrorIs(t, <-waiting, ErrClosed)
	require.NoError(t, q.Close(), "Close is idempotent")

	require.ErrorIs(t, q.Enqueue(ctx, Message{ID: "b"}), ErrClosed)
	_, err := q.Receive(ctx)
	require.ErrorIs(t, err, ErrClosed)
	_, err = q.Cancel(ctx, "a")
	require.ErrorIs(t, err, ErrClosed)
	_, err = q.Stats(ctx)
	require.ErrorIs(t, err, ErrClosed)
	_, err = q.DeadLetters(ctx, 1)
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, q.Requeue(ctx, "a", time.Time{}), ErrClosed)
	require.ErrorIs(t, d.Ack(ctx), ErrClosed)
}

func TestReceiveEndsWithContext(t *testing.T) {
	q, _, _ := testQueue(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := q.Receive(ctx); done <- err }()
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("Receive did not end with its context")
	}
}

func TestReopenKeepsMessagesAndLeases(t *testing.T) {
	mock := clock.NewMock()
	path := filepath.Join(t.TempDir(), "q.db")
	ctx := context.Background()
	opts := []Option{WithClock(mock), WithVisibilityTimeout(10 * time.Second), WithBackoff(fixedBackoff)}
	q, err := Open(path, opts...)
	require.NoError(t, err)
	for i := range 5 {
		require.NoError(t, q.Enqueue(ctx, Message{ID: fmt.Sprint(i), Due: mock.Now().Add(time.Duration(i) * time.Second)}))
	}
	d := receive(t, q) // "0", left in flight by a "crash"
	require.Equal(t, "0", d.ID)
	require.NoError(t, q.Close())

	q, err = Open(path, opts...)
	require.NoError(t, err)
	defer q.Close()
	assert.Equal(t, Stats{Pending: 4, InFlight: 1, NextDue: mock.Now().Add(time.Second)}, stats(t, q))
	// The lease of "0" expires at 10s, and the reaper gives it a back-off
	// of 1s from when it runs: let it run at 10s before moving on, rather
	// than hoping that the queue's wheel keeps pace with mock.Add.
	mock.Add(10 * time.Second)
	require.Eventually(t, func() bool { return stats(t, q).InFlight == 0 }, 5*time.Second, time.Millisecond)
	mock.Add(time.Second)
	got := map[string]int{}
	for range 5 {
		d := receive(t, q)
		got[d.ID] = d.Attempt
		require.NoError(t, d.Ack(ctx))
	}
	assert.Equal(t, map[string]int{"0": 2, "1": 1, "2": 1, "3": 1, "4": 1}, got)
}

func TestQueuesShareAWheel(t *testing.T) {
	mock := clock.NewMock()
	w, err := timingwheel.New(timingwheel.WithClock(mock))
	require.NoError(t, err)
	w.Start()
	defer w.Stop()
	ctx := context.Background()
	var qs []*Queue
	for i := range 2 {
		q, err := Open(filepath.Join(t.TempDir(), fmt.Sprint(i, ".db")), WithClock(mock), WithWheel(w))
		require.NoError(t, err)
		defer q.Close()
		require.NoError(t, q.Enqueue(ctx, Message{ID: fmt.Sprint("m", i), Due: mock.Now().Add(time.Minute)}))
		qs = append(qs, q)
	}
	var got []<-chan *Delivery
	for _, q := range qs {
		got = append(got, waitingReceive(t, q))
	}
	// The minute sets off two generations of timers: each queue's due
	// timer, which wakes its receiver to claim 50ms ahead, and the timer
	// that then holds the message until its due time, set while Add
	// runs. Mock.Add runs the timers due up to its target and then sets
	// the time, so a timer set in between waits for the next step: Sync
	// runs what is due.
	mock.Add(time.Minute)
	require.NoError(t, w.Sync(ctx))
	for i, ch := range got {
		select {
		case d := <-ch:
			assert.Equal(t, fmt.Sprint("m", i), d.ID)
		case <-time.After(5 * time.Second):
			t.Fatalf("queue %d was not woken by the shared wheel", i)
		}
	}
	for _, q := range qs {
		require.NoError(t, q.Close())
	}
	assert.Zero(t, w.Len(), "closed queues leave no timers on a shared wheel")
}

func TestLoggerHearsOfDeadMessages(t *testing.T) {
	var buf syncbuf.Buffer
	q, _, _ := testQueue(t, WithMaxAttempts(1), WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
	ctx := context.Background()
	require.NoError(t, q.Enqueue(ctx, Message{ID: "a"}))
	require.NoError(t, receive(t, q).Retry(ctx, 0))
	assert.Contains(t, buf.String(), "died after its last attempt")
	assert.Contains(t, buf.String(), "id=a")
}

func TestClaimedAheadButHandedOutAtDue(t *testing.T) {
	q, mock, _ := testQueue(t, withClaimAhead(claimAhead))
	ctx := context.Background()
	due := mock.Now().Add(claimAhead / 2)
	require.NoError(t, q.Enqueue(ctx, Message{ID: "a", Due: due}))

	rctx, cancel := context.WithCancel(ctx)
	got := receiveAhead(t, q, rctx)
	cancel() // once it holds a lease, Receive hands it out all the same
	mock.Add(claimAhead/2 - time.Nanosecond)
	select {
	case r := <-got:
		t.Fatalf("returned %+v %v before the due time", r.d, r.err)
	default:
	}
	mock.Add(time.Nanosecond)
	select {
	case r := <-got:
		require.NoError(t, r.err)
		assert.Equal(t, "a", r.d.ID)
		assert.Equal(t, 1, r.d.Attempt)
		assert.False(t, mock.Now().Before(r.d.Due))
		assert.True(t, r.d.Deadline.Equal(due.Add(30*time.Second)), "the lease runs from the due time: %v", r.d.Deadline)
		require.NoError(t, r.d.Ack(ctx))
	case <-time.After(5 * time.Second):
		t.Fatal("not handed out at its due time")
	}
	assert.Equal(t, Stats{}, stats(t, q))
}

type received struct {
	d   *Delivery
	err error
}

// receiveAhead starts a Receive and returns once it holds a message it
// claimed ahead of its due time.
func receiveAhead(t *testing.T, q *Queue, ctx context.Context) <-chan received {
	t.Helper()
	got := make(chan received, 1)
	go func() {
		d, err := q.Receive(ctx)
		got <- received{d, err}
	}()
	require.Eventually(t, func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return len(q.ahead) == 1
	}, 5*time.Second, time.Millisecond, "not claimed ahead of its due time")
	return got
}

func TestEnqueueRevokesAMessageClaimedAhead(t *testing.T) {
	q, mock, _ := testQueue(t, withClaimAhead(claimAhead))
	ctx := context.Background()
	due := mock.Now().Add(claimAhead / 2)
	require.NoError(t, q.Enqueue(ctx, Message{ID: "a", Payload: []byte("v1"), Due: due}))
	got := receiveAhead(t, q, ctx)
	require.NoError(t, q.Enqueue(ctx, Message{ID: "a", Payload: []byte("v2"), Due: due}))
	mock.Add(claimAhead)
	select {
	case r := <-got:
		require.NoError(t, r.err)
		assert.Equal(t, []byte("v2"), r.d.Payload, "the replaced version is never handed out")
		assert.Equal(t, 1, r.d.Attempt)
		require.NoError(t, r.d.Ack(ctx))
	case <-time.After(5 * time.Second):
		t.Fatal("the new version was not delivered")
	}
	assert.Equal(t, Stats{}, stats(t, q))
}

func TestCancelOfAMessageClaimedAhead(t *testing.T) {
	q, mock, _ := testQueue(t, withClaimAhead(claimAhead))
	ctx := context.Background()
	require.NoError(t, q.Enqueue(ctx, Message{ID: "a", Due: mock.Now().Add(claimAhead / 2)}))
	rctx, cancel := context.WithCancel(ctx)
	got := receiveAhead(t, q, rctx)
	found, err := q.Cancel(ctx, "a")
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, Stats{}, stats(t, q))
	mock.Add(claimAhead)
	cancel()
	select {
	case r := <-got:
		require.ErrorIs(t, r.err, context.Canceled, "a cancelled message is not handed out")
	case <-time.After(5 * time.Second):
		t.Fatal("Receive did not end")
	}
}

func TestCloseGivesBackAMessageClaimedAhead(t *testing.T) {
	q, mock, path := testQueue(t, WithMaxAttempts(1), withClaimAhead(claimAhead))
	ctx := context.Background()
	due := mock.Now().Add(claimAhead / 2)
	require.NoError(t, q.Enqueue(ctx, Message{ID: "a", Due: due}))
	got := receiveAhead(t, q, ctx)
	require.NoError(t, q.Close())
	r := <-got
	require.ErrorIs(t, r.err, ErrClosed)

	q2, err := Open(path, WithClock(mock), WithMaxAttempts(1), withClaimAhead(0))
	require.NoError(t, err)
	defer q2.Close()
	st := stats(t, q2)
	assert.Equal(t, 1, st.Pending, "given back, not left to expire into the dead letters")
	assert.True(t, st.NextDue.Equal(due), "due as before: %v", st.NextDue)
	mock.Add(claimAhead)
	d := receive(t, q2)
	assert.Equal(t, "a", d.ID)
	require.NoError(t, d.Ack(ctx))
}

func TestBoltStoreClaimAhead(t *testing.T) {
	mock := clock.NewMock()
	s, err := OpenBoltStore(filepath.Join(t.TempDir(), "q.db"), WithClock(mock))
	require.NoError(t, err)
	defer s.Close()
	ctx := context.Background()
	now := mock.Now()
	require.NoError(t, s.Enqueue(ctx, []Message{
		{ID: "now"}, {ID: "soon", Due: now.Add(40 * time.Millisecond)}, {ID: "later", Due: now.Add(60 * time.Millisecond)},
	}))
	c, err := s.Claim(ctx, ClaimParams{Limit: 10, Lease: time.Second, Ahead: 50 * time.Millisecond})
	require.NoError(t, err)
	require.Len(t, c.Leases, 2)
	assert.Equal(t, "now", c.Leases[0].ID)
	assert.True(t, c.Leases[0].Deadline.Equal(now.Add(time.Second)))
	assert.Equal(t, "soon", c.Leases[1].ID)
	assert.True(t, c.Leases[1].Deadline.Equal(now.Add(40*time.Millisecond+time.Second)), "deadline from the due time")
	assert.True(t, c.NextDue.Equal(now.Add(60*time.Millisecond)))
	assert.True(t, c.NextDeadline.Equal(now.Add(time.Second)))
}
