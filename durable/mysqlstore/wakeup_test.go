package mysqlstore

import (
	"context"
	"database/sql"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// otherProcess returns a *sql.DB of its own on the test server: stores on
// it share the queue with the shared one's as another process's would,
// with no in-process wake-up between them.
func otherProcess(t *testing.T) *sql.DB {
	t.Helper()
	testDBHandle(t)
	db, err := openDB(server)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// TestWakeupAcrossProcesses: a message enqueued by another process, due
// before anything the receiving queue knows of, is delivered within 100ms
// of its due time (p99), by the poll alone: the receivers wait in Run,
// idle, when each message is enqueued.
func TestWakeupAcrossProcesses(t *testing.T) {
	queue := freshQueue()
	producer := openStore(t, otherProcess(t), queue)
	q := newQueue(t, openStore(t, testDBHandle(t), queue))
	const n = 40
	type got struct {
		id   string
		late time.Duration
	}
	dues := make(map[string]time.Time, n)
	var mu sync.Mutex
	received := make(chan got, n)
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- q.Run(rctx, 2, func(_ context.Context, d *durable.Delivery) error {
			at := time.Now()
			mu.Lock()
			due := dues[d.ID]
			mu.Unlock()
			received <- got{d.ID, at.Sub(due)}
			return nil
		})
	}()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()
	late := make([]time.Duration, 0, n)
	for i := range n {
		// Half due at once, half 50ms ahead, each after the last was
		// received: the receivers idle in between, knowing of nothing.
		due := time.Now()
		if i%2 == 1 {
			due = due.Add(50 * time.Millisecond)
		}
		id := "m" + strconv.Itoa(i)
		mu.Lock()
		dues[id] = due
		mu.Unlock()
		require.NoError(t, producer.Enqueue(ctx, []durable.Message{{ID: id, Due: due}}))
		select {
		case g := <-received:
			require.Equal(t, id, g.id)
			require.GreaterOrEqual(t, g.late, time.Duration(0), "%s delivered before its due time", id)
			late = append(late, g.late)
		case <-time.After(5 * time.Second):
			t.Fatalf("message %d not received within 5s", i)
		}
	}
	slices.Sort(late)
	p50, p99 := late[n/2], late[(n*99+99)/100-1]
	t.Logf("cross-process wake-up: %d messages, lateness p50 %v, p99 %v, max %v (poll every %v)",
		n, p50.Round(time.Millisecond), p99.Round(time.Millisecond), late[n-1].Round(time.Millisecond), DefaultPoll)
	require.Less(t, p99, 100*time.Millisecond, "p99 of the lateness across processes")
}

// TestWakeupInProcess: the writes of another store of the same *sql.DB and
// queue wake the subscribers at once, without the poll.
func TestWakeupInProcess(t *testing.T) {
	queue := freshQueue()
	s := openStore(t, testDBHandle(t), queue, WithPoll(0))
	other := openStore(t, testDBHandle(t), queue, WithPoll(0))
	w, stop := other.Wakeups()
	defer stop()
	require.NoError(t, s.Enqueue(ctx, []durable.Message{msg("a", time.Time{})}))
	select {
	case <-w:
	case <-time.After(5 * time.Second):
		t.Fatal("no wake-up from an Enqueue of another store of the process")
	}
	require.NoError(t, s.SetPaused(ctx, true))
	require.NoError(t, s.SetPaused(ctx, false))
	select {
	case <-w:
	case <-time.After(5 * time.Second):
		t.Fatal("no wake-up from a resume")
	}
}

// TestWakeupOnResumeAcrossProcesses: a resume in another process wakes the
// receivers at the next poll.
func TestWakeupOnResumeAcrossProcesses(t *testing.T) {
	queue := freshQueue()
	s := openStore(t, otherProcess(t), queue)
	other := openStore(t, testDBHandle(t), queue)
	require.NoError(t, s.SetPaused(ctx, true))
	w, stop := other.Wakeups()
	defer stop()
	select { // the first poll wakes once
	case <-w:
	case <-time.After(5 * time.Second):
		t.Fatal("no wake-up at the first poll")
	}
	require.NoError(t, s.SetPaused(ctx, false))
	select {
	case <-w:
	case <-time.After(5 * time.Second):
		t.Fatal("no wake-up from a resume in another process")
	}
}

// TestIdleCost counts the statements an idle queue's Run sends to the
// server in a second: the poll's (1s/DefaultPoll) and a few of the
// queue's own.
func TestIdleCost(t *testing.T) {
	q := newQueue(t, newStore(t))
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- q.Run(rctx, 4, func(context.Context, *durable.Delivery) error { return nil })
	}()
	defer func() {
		cancel()
		<-done
	}()
	questions := func() int64 {
		var name string
		var v int64
		require.NoError(t, testDBHandle(t).QueryRowContext(ctx, `SHOW GLOBAL STATUS LIKE 'Questions'`).Scan(&name, &v))
		return v
	}
	// Let it settle: its first claims and its poll's first reading.
	time.Sleep(500 * time.Millisecond)
	before := questions()
	time.Sleep(time.Second)
	n := questions() - before - 1 // the second SHOW itself
	polls := int64(time.Second / DefaultPoll)
	t.Logf("idle cost: %d statements in a second (the poll: %d)", n, polls)
	require.LessOrEqual(t, n, polls+5, "statements of an idle queue in a second")
}
