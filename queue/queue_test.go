package queue

import (
	"context"
	"hash/maphash"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/seed64e23a5c/timingwheel"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// waitTimeout bounds every wait for something that must happen; it is
// only reached when a test fails.
const waitTimeout = 10 * time.Second

// fixture is a queue on a mock clock with its own wheel.
type fixture struct {
	t     *testing.T
	mock  *clock.Mock
	q     *Queue[string]
	wheel *timingwheel.TimingWheel
	start time.Time
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	mock := clock.NewMock()
	q := New[string](WithClock(mock))
	t.Cleanup(func() { q.Close() })
	return &fixture{t: t, mock: mock, q: q, wheel: q.c.wheel, start: mock.Now()}
}

// advance moves the mock clock by d and waits until every timer due has
// fired and moved its item.
func (f *fixture) advance(d time.Duration) {
	f.t.Helper()
	f.mock.Add(d)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	require.NoError(f.t, f.wheel.Sync(ctx))
}

func (f *fixture) offer(key, v string, d time.Duration) {
	f.t.Helper()
	require.NoError(f.t, f.q.Offer(key, v, d))
}

// takeAll takes every item due now.
func (f *fixture) takeAll() []Item[string] {
	var items []Item[string]
	for {
		it, ok := f.q.TryTake()
		if !ok {
			return items
		}
		items = append(items, it)
	}
}

func keys(items []Item[string]) []string {
	ks := make([]string, len(items))
	for i, it := range items {
		ks[i] = it.Key
	}
	return ks
}

func (f *fixture) waiters() int {
	f.q.c.mu.Lock()
	defer f.q.c.mu.Unlock()
	n := 0
	for w := f.q.c.waiters.head; w != nil; w = w.next {
		n++
	}
	return n
}

// waitForWaiters waits until n takers are blocked in Take.
func (f *fixture) waitForWaiters(n int) {
	f.t.Helper()
	require.Eventually(f.t, func() bool { return f.waiters() == n }, waitTimeout, time.Millisecond)
}

func (f *fixture) node(key string) *node {
	f.q.c.mu.Lock()
	defer f.q.c.mu.Unlock()
	return f.q.c.index.find(key, f.q.c.index.hash(key))
}

type result struct {
	it  Item[string]
	err error
}

func (f *fixture) takeAsync(ctx context.Context) <-chan result {
	ch := make(chan result, 1)
	go func() {
		it, err := f.q.Take(ctx)
		ch <- result{it, err}
	}()
	return ch
}

func receive(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(waitTimeout):
		require.FailNow(t, "Take did not return")
		return result{}
	}
}

// Rule 1: never before the due time.
func TestNeverTakenBeforeDue(t *testing.T) {
	f := newFixture(t)
	f.offer("a", "A", 10*time.Second)
	_, ok := f.q.TryTake()
	assert.False(t, ok)

	f.advance(10*time.Second - time.Nanosecond)
	_, ok = f.q.TryTake()
	assert.False(t, ok, "taken 1ns before its due time")

	f.advance(time.Nanosecond)
	it, ok := f.q.TryTake()
	require.True(t, ok)
	assert.Equal(t, Item[string]{Key: "a", Value: "A", Due: f.start.Add(10 * time.Second)}, it)
	assert.Equal(t, 0, f.q.Len())
}

// Rule 1, with due times off the tick grid: at every step, what was taken
// is due, and what was due a tick ago was taken.
func TestNeverEarlyOffGrid(t *testing.T) {
	f := newFixture(t)
	due := map[string]time.Time{}
	for i := range 200 {
		k := string(rune('A'+i%26)) + string(rune('a'+i/26))
		d := time.Duration(i)*137*time.Microsecond + time.Duration(i%7)*time.Nanosecond
		f.offer(k, k, d)
		due[k] = f.start.Add(d)
	}
	taken := map[string]bool{}
	for step := 0; len(taken) < len(due); step++ {
		require.Less(t, step, 200, "items never came due")
		f.advance(173 * time.Microsecond)
		now := f.mock.Now()
		for _, it := range f.takeAll() {
			assert.False(t, it.Due.After(now), "%s taken at %v before due %v", it.Key, now, it.Due)
			assert.Equal(t, due[it.Key], it.Due)
			taken[it.Key] = true
		}
		for k, d := range due {
			if !d.After(now.Add(-timingwheel.DefaultTick)) {
				assert.True(t, taken[k], "%s due at %v not ready at %v", k, d, now)
			}
		}
	}
}

// Rule 1: due order, and offer order among equal due times.
func TestDueOrderThenOfferOrder(t *testing.T) {
	f := newFixture(t)
	f.offer("k0", "", 5*time.Second)
	f.offer("k1", "", 1*time.Second)
	f.offer("k2", "", 3*time.Second)
	f.offer("k3", "", 1*time.Second)
	require.NoError(t, f.q.OfferAt("k4", "", f.start.Add(5*time.Second)))
	f.offer("k5", "", 2*time.Second)
	require.NoError(t, f.q.OfferAt("k6", "", f.start.Add(-time.Hour))) // due already
	assert.Equal(t, 7, f.q.Len())

	f.advance(10 * time.Second)
	assert.Equal(t, []string{"k6", "k1", "k3", "k5", "k2", "k0", "k4"}, keys(f.takeAll()))
}

// Rule 1: items due at once are ready without the wheel, in offer order.
func TestDueAtOnce(t *testing.T) {
	f := newFixture(t)
	f.offer("a", "", 0)
	f.offer("b", "", -time.Second)
	f.offer("c", "", 0)
	assert.Equal(t, []string{"b", "a", "c"}, keys(f.takeAll()))
}

// Rule 3: an upsert of a pending item moves it; the old version is gone.
func TestUpsertPending(t *testing.T) {
	f := newFixture(t)
	f.offer("a", "v1", 10*time.Second)
	f.offer("a", "v2", 20*time.Second)
	assert.Equal(t, 1, f.q.Len())
	it, ok := f.q.Peek("a")
	require.True(t, ok)
	assert.Equal(t, Item[string]{Key: "a", Value: "v2", Due: f.start.Add(20 * time.Second)}, it)

	f.advance(10 * time.Second)
	assert.Empty(t, f.takeAll(), "the old version came due")
	f.advance(10 * time.Second)
	assert.Equal(t, []Item[string]{{Key: "a", Value: "v2", Due: f.start.Add(20 * time.Second)}}, f.takeAll())

	// Earlier, too.
	f.offer("b", "v1", 10*time.Second)
	f.offer("b", "v2", time.Second)
	f.advance(time.Second)
	assert.Equal(t, []Item[string]{{Key: "b", Value: "v2", Due: f.start.Add(21 * time.Second)}}, f.takeAll())
	f.advance(time.Hour)
	assert.Empty(t, f.takeAll())
}

// Rule 3: an upsert of a due item not yet taken takes it out of ready.
func TestUpsertReady(t *testing.T) {
	f := newFixture(t)
	f.offer("a", "v1", time.Second)
	f.offer("b", "b", time.Second)
	f.advance(time.Second)
	f.offer("a", "v2", 5*time.Second)
	assert.Equal(t, []string{"b"}, keys(f.takeAll()))
	assert.Equal(t, 1, f.q.Len())
	f.advance(5*time.Second - time.Nanosecond)
	assert.Empty(t, f.takeAll())
	f.advance(time.Nanosecond)
	assert.Equal(t, []Item[string]{{Key: "a", Value: "v2", Due: f.start.Add(6 * time.Second)}}, f.takeAll())
}

// Rule 1 and 3: an upsert that leaves an item due re-orders it, and counts
// as a new offer among equal due times.
func TestUpsertReadyStaysReady(t *testing.T) {
	f := newFixture(t)
	at := f.start.Add(time.Second)
	require.NoError(t, f.q.OfferAt("a", "v1", at))
	require.NoError(t, f.q.OfferAt("b", "b", at))
	require.NoError(t, f.q.OfferAt("c", "c", at.Add(time.Second)))
	f.advance(3 * time.Second)
	require.NoError(t, f.q.OfferAt("a", "v2", at)) // same due, offered last
	require.NoError(t, f.q.OfferAt("c", "c2", f.start))
	items := f.takeAll()
	assert.Equal(t, []string{"c", "b", "a"}, keys(items))
	assert.Equal(t, "c2", items[0].Value)
	assert.Equal(t, "v2", items[2].Value)
}

// Rule 3: Remove before take means never delivered.
func TestRemove(t *testing.T) {
	f := newFixture(t)
	f.offer("pending", "", time.Second)
	f.offer("ready", "", 0)
	f.offer("kept", "", time.Second)
	assert.False(t, f.q.Remove("missing"))
	assert.False(t, f.q.Remove(""))
	assert.True(t, f.q.Remove("pending"))
	assert.False(t, f.q.Remove("pending"))
	assert.True(t, f.q.Remove("ready"))
	assert.Equal(t, 1, f.q.Len())
	_, ok := f.q.Peek("pending")
	assert.False(t, ok)

	f.advance(time.Hour)
	assert.Equal(t, []string{"kept"}, keys(f.takeAll()))
	assert.False(t, f.q.Remove("kept"), "removed after it was taken")

	// A removed key can be offered again.
	f.offer("pending", "again", time.Second)
	f.advance(time.Second)
	items := f.takeAll()
	require.Len(t, items, 1)
	assert.Equal(t, "again", items[0].Value)
}

func TestPeek(t *testing.T) {
	f := newFixture(t)
	_, ok := f.q.Peek("a")
	assert.False(t, ok)
	f.offer("a", "A", time.Minute)
	it, ok := f.q.Peek("a")
	require.True(t, ok)
	assert.Equal(t, Item[string]{Key: "a", Value: "A", Due: f.start.Add(time.Minute)}, it)
	f.advance(time.Minute)
	it2, ok := f.q.Peek("a")
	require.True(t, ok, "a due item is still held")
	assert.Equal(t, it, it2)
	_, ok = f.q.TryTake()
	require.True(t, ok)
	_, ok = f.q.Peek("a")
	assert.False(t, ok)
}

func TestEmptyKey(t *testing.T) {
	f := newFixture(t)
	assert.ErrorIs(t, f.q.Offer("", "", 0), ErrEmptyKey)
	assert.ErrorIs(t, f.q.OfferAt("", "", f.start), ErrEmptyKey)
	_, ok := f.q.Peek("")
	assert.False(t, ok)
	assert.Equal(t, 0, f.q.Len())
}

// Take blocks until an item is due, then returns it.
func TestTakeBlocksUntilDue(t *testing.T) {
	f := newFixture(t)
	f.offer("a", "A", time.Minute)
	ch := f.takeAsync(context.Background())
	f.waitForWaiters(1)
	f.advance(time.Minute - time.Nanosecond)
	select {
	case r := <-ch:
		require.FailNow(t, "Take returned early", "%+v", r)
	default:
	}
	f.advance(time.Nanosecond)
	r := receive(t, ch)
	require.NoError(t, r.err)
	assert.Equal(t, "a", r.it.Key)
	assert.Equal(t, 0, f.waiters())
}

// Several blocked takers each get one item.
func TestTakeManyWaiters(t *testing.T) {
	f := newFixture(t)
	chans := make([]<-chan result, 5)
	for i := range chans {
		chans[i] = f.takeAsync(context.Background())
	}
	f.waitForWaiters(len(chans))
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		f.offer(k, k, time.Second)
	}
	f.advance(time.Second)
	got := map[string]bool{}
	for _, ch := range chans {
		r := receive(t, ch)
		require.NoError(t, r.err)
		assert.False(t, got[r.it.Key], "%s taken twice", r.it.Key)
		got[r.it.Key] = true
	}
	assert.Len(t, got, 5)
	assert.Equal(t, 0, f.q.Len())
}

// Rule 4: Take returns the context's error; items stay.
func TestTakeContext(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f.offer("a", "A", 0)
	_, err := f.q.Take(ctx)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, f.q.Len(), "a Take with an ended context took an item")
	_, ok := f.q.TryTake()
	require.True(t, ok)

	ctx, cancel = context.WithCancel(context.Background())
	ch := f.takeAsync(ctx)
	f.waitForWaiters(1)
	cancel()
	r := receive(t, ch)
	assert.ErrorIs(t, r.err, context.Canceled)
	assert.Equal(t, 0, f.waiters(), "a cancelled taker stayed listed")

	// A real deadline, generous.
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = f.q.Take(ctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	// The queue still works.
	f.offer("b", "B", time.Second)
	ch = f.takeAsync(context.Background())
	f.waitForWaiters(1)
	f.advance(time.Second)
	r = receive(t, ch)
	require.NoError(t, r.err)
	assert.Equal(t, "b", r.it.Key)
}

// Rule 4: a taker woken for an item at the moment its context ends either
// returns the item or leaves it for the next taker, which gets it.
func TestTakeCancelledAtDelivery(t *testing.T) {
	for range 50 {
		f := newFixture(t)
		ctxA, cancelA := context.WithCancel(context.Background())
		ctxB, cancelB := context.WithCancel(context.Background())
		f.offer("x", "X", time.Hour)
		a := f.takeAsync(ctxA)
		f.waitForWaiters(1)
		b := f.takeAsync(ctxB)
		f.waitForWaiters(2)

		// Make x ready, which wakes A, and end A's context, atomically:
		// A then sees both at once.
		n := f.node("x")
		f.q.c.mu.Lock()
		n.timer.Stop()
		n.due = f.q.c.now()
		f.q.c.pushReady(n)
		cancelA()
		f.q.c.mu.Unlock()

		ra := receive(t, a)
		if ra.err == nil {
			assert.Equal(t, "x", ra.it.Key)
			cancelB()
			rb := receive(t, b)
			assert.ErrorIs(t, rb.err, context.Canceled)
		} else {
			assert.ErrorIs(t, ra.err, context.Canceled)
			rb := receive(t, b)
			require.NoError(t, rb.err, "the item was lost with A's context")
			assert.Equal(t, "x", rb.it.Key)
			cancelB()
		}
		assert.Equal(t, 0, f.q.Len())
		assert.Equal(t, 0, f.waiters())
		f.q.Close()
	}
}

// Rule 5.
func TestClose(t *testing.T) {
	f := newFixture(t)
	f.offer("late", "L", time.Hour)
	f.offer("ready2", "R2", 0)
	f.offer("ready1", "R1", -time.Second)
	f.offer("soon", "S", time.Minute)
	f.offer("gone", "G", time.Minute)
	f.q.Remove("gone")
	blocked := f.takeAsync(context.Background())
	// The blocked taker may take a ready item first; wait until it blocks
	// for good.
	r := receive(t, blocked)
	require.NoError(t, r.err)
	assert.Equal(t, "ready1", r.it.Key)
	_, _ = f.q.TryTake() // ready2
	blocked = f.takeAsync(context.Background())
	f.waitForWaiters(1)

	items := f.q.Close()
	assert.Equal(t, []Item[string]{
		{Key: "soon", Value: "S", Due: f.start.Add(time.Minute)},
		{Key: "late", Value: "L", Due: f.start.Add(time.Hour)},
	}, items)
	r = receive(t, blocked)
	assert.ErrorIs(t, r.err, ErrClosed)

	_, err := f.q.Take(context.Background())
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, f.q.Offer("x", "", 0), ErrClosed)
	assert.ErrorIs(t, f.q.OfferAt("x", "", f.start), ErrClosed)
	_, ok := f.q.TryTake()
	assert.False(t, ok)
	assert.False(t, f.q.Remove("soon"))
	_, ok = f.q.Peek("soon")
	assert.False(t, ok)
	assert.Equal(t, 0, f.q.Len())
	assert.Nil(t, f.q.Close())
	assert.ErrorIs(t, f.wheel.Sync(context.Background()), timingwheel.ErrStopped, "Close left its own wheel running")
}

// Rule 5: Close returns due items not yet taken, with the pending ones.
func TestCloseReturnsReady(t *testing.T) {
	f := newFixture(t)
	f.offer("b", "B", time.Second)
	f.offer("a", "A", 0)
	f.offer("c", "C", time.Hour)
	f.advance(time.Second)
	assert.Equal(t, []string{"a", "b", "c"}, keys(f.q.Close()))
}

// With WithWheel, Close stops only the queue's own timers.
func TestSharedWheel(t *testing.T) {
	mock := clock.NewMock()
	w, err := timingwheel.New(timingwheel.WithClock(mock), timingwheel.WithExecutor(func(task func()) { task() }))
	require.NoError(t, err)
	w.Start()
	defer w.Stop()
	q1 := New[int](WithWheel(w), WithClock(mock))
	q2 := New[int](WithWheel(w), WithClock(mock))
	defer q2.Close()
	require.NoError(t, q1.Offer("a", 1, time.Second))
	require.NoError(t, q1.Offer("b", 2, time.Second))
	require.NoError(t, q2.Offer("a", 3, time.Second))
	assert.Equal(t, 3, w.Len())

	items := q1.Close()
	assert.Len(t, items, 2)
	assert.Equal(t, 1, w.Len(), "Close left its timers on the shared wheel")

	mock.Add(time.Second)
	require.NoError(t, w.Sync(context.Background()), "Close stopped the shared wheel")
	it, ok := q2.TryTake()
	require.True(t, ok)
	assert.Equal(t, Item[int]{Key: "a", Value: 3, Due: time.Unix(0, 0).Add(time.Second)}, it)
}

// deferredExecutor holds the tasks of fired timers until the test runs
// them, to reproduce a fire racing with Offer or Remove.
type deferredExecutor struct {
	mu    sync.Mutex
	tasks []func()
}

func (d *deferredExecutor) exec(task func()) {
	d.mu.Lock()
	d.tasks = append(d.tasks, task)
	d.mu.Unlock()
}

func (d *deferredExecutor) runAll() int {
	d.mu.Lock()
	tasks := d.tasks
	d.tasks = nil
	d.mu.Unlock()
	for _, t := range tasks {
		t()
	}
	return len(tasks)
}

func newDeferredFixture(t *testing.T) (*fixture, *deferredExecutor) {
	mock := clock.NewMock()
	d := &deferredExecutor{}
	w, err := timingwheel.New(timingwheel.WithClock(mock), timingwheel.WithExecutor(d.exec))
	require.NoError(t, err)
	w.Start()
	q := New[string](WithWheel(w), WithClock(mock))
	t.Cleanup(func() {
		q.Close()
		w.Stop()
	})
	return &fixture{t: t, mock: mock, q: q, wheel: w, start: mock.Now()}, d
}

// Rule 3: a timer that fired before an upsert, and whose task runs after
// it, does not deliver the new version early nor the old one at all.
func TestStaleFireAfterUpsert(t *testing.T) {
	f, d := newDeferredFixture(t)
	f.offer("a", "v1", time.Second)
	f.advance(time.Second) // fires; the task waits
	f.offer("a", "v2", time.Minute-time.Second)
	require.Equal(t, 1, d.runAll()) // the stale task
	assert.Empty(t, f.takeAll(), "a stale fire delivered")

	f.advance(time.Minute - time.Second - time.Nanosecond)
	d.runAll()
	assert.Empty(t, f.takeAll())
	f.advance(time.Nanosecond)
	require.Equal(t, 1, d.runAll())
	assert.Equal(t, []Item[string]{{Key: "a", Value: "v2", Due: f.start.Add(time.Minute)}}, f.takeAll())
	f.advance(time.Hour)
	d.runAll()
	assert.Empty(t, f.takeAll())
}

// Rule 3: the same, when the upsert keeps the item due: the new version is
// delivered once.
func TestStaleFireAfterUpsertStillDue(t *testing.T) {
	f, d := newDeferredFixture(t)
	f.offer("a", "v1", time.Second)
	f.advance(time.Second)
	f.offer("a", "v2", 0)
	require.Equal(t, 1, d.runAll())
	items := f.takeAll()
	require.Len(t, items, 1)
	assert.Equal(t, "v2", items[0].Value)
	f.advance(time.Hour)
	d.runAll()
	assert.Empty(t, f.takeAll())
}

// Rule 3: a fire racing with Remove, or with a Remove and a new Offer of
// the key (which may reuse the node), does not deliver.
func TestStaleFireAfterRemove(t *testing.T) {
	f, d := newDeferredFixture(t)
	f.offer("a", "v1", time.Second)
	f.advance(time.Second)
	assert.True(t, f.q.Remove("a"))
	f.offer("b", "v2", time.Minute)
	require.Equal(t, 1, d.runAll())
	assert.Empty(t, f.takeAll())
	assert.Equal(t, 1, f.q.Len())
	f.advance(time.Minute)
	d.runAll()
	assert.Equal(t, []string{"b"}, keys(f.takeAll()))
}

// A fire whose task runs after Close does nothing.
func TestStaleFireAfterClose(t *testing.T) {
	f, d := newDeferredFixture(t)
	f.offer("a", "v1", time.Second)
	f.advance(time.Second)
	assert.Equal(t, []string{"a"}, keys(f.q.Close()))
	require.Equal(t, 1, d.runAll())
	_, ok := f.q.TryTake()
	assert.False(t, ok)
}

// If the wheel's clock runs ahead of the queue's, items still wait for the
// queue's clock.
func TestWheelClockAhead(t *testing.T) {
	wheelClock, queueClock := clock.NewMock(), clock.NewMock()
	w, err := timingwheel.New(timingwheel.WithClock(wheelClock), timingwheel.WithExecutor(func(task func()) { task() }))
	require.NoError(t, err)
	w.Start()
	defer w.Stop()
	q := New[int](WithWheel(w), WithClock(queueClock))
	defer q.Close()
	require.NoError(t, q.Offer("a", 1, time.Second))
	wheelClock.Add(time.Hour)
	require.NoError(t, w.Sync(context.Background()))
	_, ok := q.TryTake()
	assert.False(t, ok, "taken before its due time on the queue's clock")
	assert.Equal(t, 1, q.Len())
}

// The real clock, once, with generous bounds.
func TestRealClock(t *testing.T) {
	q := New[int]()
	defer q.Close()
	start := time.Now()
	require.NoError(t, q.Offer("a", 1, 20*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	it, err := q.Take(ctx)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)
	assert.False(t, time.Now().Before(it.Due))
	assert.WithinDuration(t, start.Add(20*time.Millisecond), it.Due, 5*time.Millisecond)
}

func TestIndexGrowsAndShrinks(t *testing.T) {
	x := index{seed: maphash.MakeSeed()}
	nodes := make([]*node, 100*keepSlots)
	for i := range nodes {
		k := strconv.Itoa(i)
		nodes[i] = &node{key: k, hash: x.hash(k)}
		x.insert(nodes[i])
	}
	assert.GreaterOrEqual(t, len(x.buckets), len(nodes))
	for i, n := range nodes {
		require.Same(t, n, x.find(n.key, n.hash), "key %d", i)
	}
	kept := nodes[len(nodes)-keepSlots:]
	for _, n := range nodes[:len(nodes)-keepSlots] {
		x.remove(n)
	}
	assert.Equal(t, keepSlots, x.n)
	assert.LessOrEqual(t, len(x.buckets), 16*x.n)
	for _, n := range kept {
		require.Same(t, n, x.find(n.key, n.hash))
	}
	assert.Nil(t, x.find(nodes[0].key, nodes[0].hash))
	for _, n := range kept {
		x.remove(n)
	}
	assert.Equal(t, keepSlots, len(x.buckets))
}

// A fire that finds the queue's lock taken does not wait for it: the
// holder settles the fired item when it unlocks.
func TestFireWhileLocked(t *testing.T) {
	f, d := newDeferredFixture(t)
	f.offer("a", "A", time.Second)
	ch := f.takeAsync(context.Background())
	f.waitForWaiters(1)
	f.advance(time.Second)

	f.q.c.lock()
	require.Equal(t, 1, d.runAll()) // returns although the lock is held
	assert.Equal(t, int64(1), f.q.c.nfired.Load())
	assert.Empty(t, f.q.c.ready)
	f.q.c.unlock()

	r := receive(t, ch)
	require.NoError(t, r.err)
	assert.Equal(t, "a", r.it.Key)
	assert.Equal(t, int64(0), f.q.c.nfired.Load())
}

// On a shared wheel with the default executor, tasks run on goroutines of
// their own.
func TestSharedWheelGoroutineExecutor(t *testing.T) {
	mock := clock.NewMock()
	w, err := timingwheel.New(timingwheel.WithClock(mock))
	require.NoError(t, err)
	w.Start()
	defer w.Stop()
	q := New[int](WithWheel(w), WithClock(mock))
	defer q.Close()
	for i := range 100 {
		require.NoError(t, q.Offer(strconv.Itoa(i), i, time.Duration(100-i)*time.Millisecond))
	}
	mock.Add(100 * time.Millisecond)
	require.NoError(t, w.Sync(context.Background()))
	// Sync returns once the tasks are handed to their goroutines; an item
	// is ready once its task has run. Items take turns in due order among
	// those ready, so wait until all are.
	require.Eventually(t, func() bool {
		q.c.lock()
		defer q.c.unlock()
		return len(q.c.ready) == 100
	}, waitTimeout, time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for i := range 100 {
		it, err := q.Take(ctx)
		require.NoError(t, err)
		assert.Equal(t, 99-i, it.Value, "out of due order")
	}
}
