package coalesce

import (
	"context"
	"errors"
	"iter"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// waitForWaiting waits until n calls wait in c for a batch.
func waitForWaiting[T any](t *testing.T, c *Coalescer[T], n int) {
	t.Helper()
	require.Eventually(t, func() bool { return c.Waiting() == n }, 10*time.Second, time.Millisecond, "%d calls waiting", n)
}

// A lone call is sent at once, alone, and gets its own outcome.
func TestALoneCallIsSentAlone(t *testing.T) {
	var batches [][]int
	c := &Coalescer[int]{Send: func(batch []*Call[int]) {
		var args []int
		for _, b := range batch {
			args = append(args, b.Arg)
			b.Err = errors.New("outcome of " + string(rune('0'+b.Arg)))
		}
		batches = append(batches, args)
	}}
	err := c.Do(context.Background(), 7)
	require.EqualError(t, err, "outcome of 7")
	assert.Equal(t, [][]int{{7}}, batches)
}

// Calls that arrive while a batch is under way go together in the next
// one, each with its own outcome, and nothing is sent twice or lost.
func TestCallsArrivingMeanwhileShareTheNextBatch(t *testing.T) {
	first := make(chan struct{})
	release := make(chan struct{})
	var mu sync.Mutex
	var batches [][]int
	c := &Coalescer[int]{Send: func(batch []*Call[int]) {
		var args []int
		for _, b := range batch {
			args = append(args, b.Arg)
			if b.Arg%2 == 1 {
				b.Err = errors.New("odd")
			}
		}
		mu.Lock()
		batches = append(batches, args)
		n := len(batches)
		mu.Unlock()
		if n == 1 {
			close(first)
			<-release
		}
	}}
	errs := make([]error, 6)
	var wg sync.WaitGroup
	wg.Go(func() { errs[0] = c.Do(context.Background(), 0) })
	<-first
	for i := 1; i < 6; i++ {
		wg.Go(func() { errs[i] = c.Do(context.Background(), i) })
	}
	// The five wait behind the first batch.
	waitForWaiting(t, c, 5)
	close(release)
	wg.Wait()

	require.Len(t, batches, 2)
	assert.Equal(t, []int{0}, batches[0])
	assert.ElementsMatch(t, []int{1, 2, 3, 4, 5}, batches[1])
	for i, err := range errs {
		if i%2 == 1 {
			assert.EqualError(t, err, "odd", "call %d", i)
		} else {
			assert.NoError(t, err, "call %d", i)
		}
	}
}

// A call that Alone picks is sent at once, in a batch of its own, while a
// batch is under way; the others wait for the next batch.
func TestAloneCallsDoNotWait(t *testing.T) {
	h := newFirstHeld()
	c := &Coalescer[int]{Alone: func(n int) bool { return n >= 100 }, Send: h.send}
	var wg sync.WaitGroup
	wg.Go(func() { assert.NoError(t, c.Do(context.Background(), 0)) })
	<-h.first
	wg.Go(func() { assert.NoError(t, c.Do(context.Background(), 1)) })
	waitForWaiting(t, c, 1)
	waited, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	require.NoError(t, c.Do(waited, 100), "sent while the first batch is held")
	assert.Equal(t, [][]int{{0}, {100}}, h.sent())
	assert.Equal(t, 1, c.Waiting(), "the small call still waits")

	ended, cancel := context.WithCancel(context.Background())
	cancel()
	assert.Equal(t, context.Canceled, c.Do(ended, 200), "an ended context: not sent")

	close(h.release)
	wg.Wait()
	assert.Equal(t, [][]int{{0}, {100}, {1}}, h.sent())
}

// firstHeld sends batches of ints: it records the arguments of each, and
// holds the first until release is closed, closing first when it comes.
type firstHeld struct {
	first, release chan struct{}
	mu             sync.Mutex
	batches        [][]int
}

func newFirstHeld() *firstHeld {
	return &firstHeld{first: make(chan struct{}), release: make(chan struct{})}
}

func (h *firstHeld) send(batch []*Call[int]) {
	var args []int
	for _, b := range batch {
		args = append(args, b.Arg)
	}
	h.mu.Lock()
	h.batches = append(h.batches, args)
	n := len(h.batches)
	h.mu.Unlock()
	if n == 1 {
		close(h.first)
		<-h.release
	}
}

// sent returns the arguments of the batches sent so far.
func (h *firstHeld) sent() [][]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.batches)
}

// Take picks a batch; the calls it leaves are sent in later batches, led
// by the first of them.
func TestTakeLeavesTheRestForLaterBatches(t *testing.T) {
	h := newFirstHeld()
	c := &Coalescer[int]{
		Take: func(waiting []*Call[int]) (batch, rest []*Call[int]) {
			n := min(2, len(waiting))
			return waiting[:n], waiting[n:]
		},
		Send: h.send,
	}
	var wg sync.WaitGroup
	wg.Go(func() { assert.NoError(t, c.Do(context.Background(), 0)) })
	<-h.first
	for i := 1; i <= 5; i++ {
		wg.Go(func() { assert.NoError(t, c.Do(context.Background(), i)) })
	}
	waitForWaiting(t, c, 5)
	close(h.release)
	wg.Wait()
	batches := h.sent()

	require.Len(t, batches, 4, "%v", batches) // {0}, then 5 calls two by two
	var sent []int
	for i, b := range batches {
		if i > 0 {
			assert.LessOrEqual(t, len(b), 2)
		}
		sent = append(sent, b...)
	}
	assert.ElementsMatch(t, []int{0, 1, 2, 3, 4, 5}, sent)
}

// A call whose context ends while it waits is not sent, and its caller
// gets the context's error; the others are sent.
func TestACallCanceledWhileWaitingIsNotSent(t *testing.T) {
	first := make(chan struct{})
	release := make(chan struct{})
	var sent []int
	c := &Coalescer[int]{Send: func(batch []*Call[int]) {
		for _, b := range batch {
			sent = append(sent, b.Arg)
		}
		if len(sent) == 1 {
			close(first)
			<-release
		}
	}}
	var wg sync.WaitGroup
	wg.Go(func() { assert.NoError(t, c.Do(context.Background(), 0)) })
	<-first
	ctx, cancel := context.WithCancel(context.Background())
	canceled := make(chan error)
	go func() { canceled <- c.Do(ctx, 1) }()
	wg.Go(func() { assert.NoError(t, c.Do(context.Background(), 2)) })
	waitForWaiting(t, c, 2)
	cancel()
	assert.ErrorIs(t, <-canceled, context.Canceled)
	close(release)
	wg.Wait()
	assert.Equal(t, []int{0, 2}, sent)
}

// Yield changes nothing of what is sent.
func TestYieldSendsEveryCall(t *testing.T) {
	var mu sync.Mutex
	count := 0
	c := &Coalescer[int]{Yield: true, Send: func(batch []*Call[int]) {
		mu.Lock()
		count += len(batch)
		mu.Unlock()
	}}
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() { assert.NoError(t, c.Do(context.Background(), i)) })
	}
	wg.Wait()
	assert.Equal(t, 100, count)
	assert.False(t, c.leading, "the last leader left the coalescer idle")
}

// A batch's context ends at the latest of its calls' deadlines, never if
// one has none, and not when a caller cancels.
func TestContextEndsAtTheLatestDeadline(t *testing.T) {
	type key struct{}
	base := context.WithValue(context.Background(), key{}, "first")
	soon, cancelSoon := context.WithTimeout(base, time.Hour)
	defer cancelSoon()
	later, cancelLater := context.WithTimeout(context.Background(), 2*time.Hour)
	defer cancelLater()
	want, _ := later.Deadline()

	ctx, cancel := Context([]*Call[int]{{Ctx: soon}, {Ctx: later}})
	defer cancel()
	got, ok := ctx.Deadline()
	require.True(t, ok)
	assert.Equal(t, want, got)
	assert.Equal(t, "first", ctx.Value(key{}), "the first call's values")
	cancelSoon()
	assert.NoError(t, ctx.Err(), "a caller's cancellation does not end the batch")

	alone, cancelAlone := Context([]*Call[int]{{Ctx: soon}})
	defer cancelAlone()
	assert.Equal(t, soon, alone, "a lone call keeps its own context")

	ctx2, cancel2 := Context([]*Call[int]{{Ctx: later}, {Ctx: context.Background()}})
	defer cancel2()
	_, ok = ctx2.Deadline()
	assert.False(t, ok, "a call without a deadline: the batch has none")
}

// Distinct picks up to its limit, one call per key, in order; the others
// wait, in order.
func TestDistinct(t *testing.T) {
	take := Distinct(3, func(s string) byte { return s[0] })
	var waiting []*Call[string]
	for _, s := range []string{"a1", "b1", "a2", "c1", "d1", "b2"} {
		waiting = append(waiting, &Call[string]{Arg: s})
	}
	batch, rest := take(waiting)
	args := func(cs []*Call[string]) (out []string) {
		for _, c := range cs {
			out = append(out, c.Arg)
		}
		return out
	}
	assert.Equal(t, []string{"a1", "b1", "c1"}, args(batch))
	assert.Equal(t, []string{"a2", "d1", "b2"}, args(rest))
}

// A Take that leaves out the leader's own call is a bug of the caller's,
// which Do reports rather than wait for ever.
func TestATakeWithoutTheLeaderPanics(t *testing.T) {
	c := &Coalescer[int]{
		Take: func(waiting []*Call[int]) (batch, rest []*Call[int]) { return nil, waiting },
		Send: func([]*Call[int]) {},
	}
	assert.PanicsWithValue(t, "coalesce: Take did not pick the first call it was given", func() {
		_ = c.Do(context.Background(), 1)
	})
}

// Distinct with a limit below one still picks the first call.
func TestDistinctPicksOneAtLeast(t *testing.T) {
	batch, rest := Distinct(0, func(i int) int { return i })([]*Call[int]{{Arg: 1}, {Arg: 2}})
	assert.Len(t, batch, 1)
	assert.Len(t, rest, 1)
}

// Fitting picks calls in order while their rows, bytes and keys fit; the
// first that does not fit, and every call after it, waits.
func TestFitting(t *testing.T) {
	type arg struct {
		keys        []string
		rows, bytes int
	}
	take := Fitting(5, 100,
		func(a arg) (int, int) { return a.rows, a.bytes },
		func(a arg) iter.Seq[string] { return slices.Values(a.keys) })
	calls := func(args ...arg) (out []*Call[arg]) {
		for _, a := range args {
			out = append(out, &Call[arg]{Arg: a})
		}
		return out
	}
	for name, c := range map[string]struct {
		waiting []*Call[arg]
		taken   int
	}{
		"all fit":        {calls(arg{[]string{"a"}, 2, 10}, arg{[]string{"b"}, 3, 10}), 2},
		"rows over":      {calls(arg{[]string{"a"}, 2, 10}, arg{[]string{"b"}, 4, 10}, arg{[]string{"c"}, 1, 1}), 1},
		"bytes over":     {calls(arg{[]string{"a"}, 1, 60}, arg{[]string{"b"}, 1, 60}), 1},
		"a key again":    {calls(arg{[]string{"a", "b"}, 2, 1}, arg{[]string{"b"}, 1, 1}, arg{[]string{"c"}, 1, 1}), 1},
		"first too big":  {calls(arg{[]string{"a"}, 9, 999}, arg{[]string{"b"}, 1, 1}), 1},
		"one call alone": {calls(arg{[]string{"a"}, 9, 999}), 1},
	} {
		batch, rest := take(c.waiting)
		assert.Equal(t, c.waiting[:c.taken], batch, name)
		assert.Equal(t, len(c.waiting)-c.taken, len(rest), name)
		if len(rest) > 0 {
			assert.Same(t, c.waiting[c.taken], rest[0], "%s: the rest in order", name)
		}
	}
}
