// Package kindtest holds the scenarios of issue #39 at the level of a
// queue, which every store runs with the same code: kinds routed by a
// durable.Mux, the unknown kind and the undecodable payload dead at once,
// a message's own MaxAttempts (through handler failures and through
// expired leases) and Timeout, Snooze, and the fields kept across an
// Enqueue that replaces, retries, Requeue and a restart.
//
// A store's test calls Run with a Harness that opens its stores. A store
// on the queue's clock (memstore, the bolt file) is given a mock clock:
// the scenarios move time themselves and check instants exactly. A store
// on a clock of its own (a server's) runs them on the real clock, with
// short durations, and waits for real.
//
// Every wait is bounded (a scenario fails, saying what it waited for,
// rather than hang), no goroutine of a scenario calls the test (handlers
// record what they saw, and the scenario checks it), and every Run and
// queue a scenario starts is stopped before it ends.
package kindtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/seed64e23a5c/timingwheel/durable/storetest"
)

// Harness opens the stores of the scenarios.
type Harness struct {
	// New opens a store of a fresh, empty backend, closed by the test's
	// cleanup. c is the queue's clock: a store on the queue's clock runs
	// on it; one on a clock of its own ignores it.
	New func(t *testing.T, c clock.Clock) store.Store
	// Reopen closes s and opens its backend again, as a restarted process
	// would.
	Reopen func(t *testing.T, s store.Store) store.Store
	// Mock says that the store runs on the clock New is given: the
	// scenarios give it a mock clock. Otherwise they give it the real
	// clock, which must be the store's (as a local server's is).
	Mock bool
}

// OnItsOwnClock returns the Harness of a store on a clock of its own (a
// server's, which must be the machine's) from the Harness of its contract
// suite: its New and Reopen, and the scenarios on the real clock.
func OnItsOwnClock(h storetest.Harness) Harness {
	return Harness{New: func(t *testing.T, _ clock.Clock) store.Store { return h.New(t) }, Reopen: h.Reopen}
}

// Run runs every scenario as a subtest, each on a store of its own.
func Run(t *testing.T, h Harness) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) { sc.run(newEnv(t, h)) })
	}
}

type scenario struct {
	name string
	run  func(e *env)
}

var scenarios = []scenario{
	{"RoutesTwoKinds", routesTwoKinds},
	{"UnknownKindAndBadPayloadDieAtOnce", deadAtOnce},
	{"MaxAttemptsOfTheMessageByHandlerFailures", maxAttemptsByFailures},
	{"MaxAttemptsOfTheMessageByExpiredLeases", maxAttemptsByExpiry},
	{"TimeoutEndsTheHandlersCtx", timeoutEndsCtx},
	{"SnoozeKeepsAttemptAndLastError", snoozeKeeps},
	{"FieldsKeptAcrossReplaceRetryRequeueRestart", fieldsKept},
}

// bound is the longest a scenario waits for something that should take
// milliseconds, on a loaded machine.
const bound = 10 * time.Second

// queueMaxAttempts is the queue's MaxAttempts: far above the messages'
// own, which must win.
const queueMaxAttempts = 10

// durations are a scenario's: natural ones on a mock clock, short ones on
// the real clock.
type durations struct {
	visibility, backoff, snooze, timeout time.Duration
	// slack is how far an instant read on the real clock may be from the
	// store's (rounding to the microsecond, a server's reading).
	slack time.Duration
}

var (
	mockDurations = durations{visibility: 30 * time.Second, backoff: time.Second, snooze: time.Minute, timeout: 5 * time.Second}
	realDurations = durations{visibility: time.Second, backoff: 20 * time.Millisecond, snooze: 300 * time.Millisecond,
		timeout: 200 * time.Millisecond, slack: 5 * time.Millisecond}
)

// env is one scenario's world: a store, a queue on it, the clock.
type env struct {
	t    *testing.T
	h    Harness
	ctx  context.Context
	clk  clock.Clock
	mock *clock.Mock // nil on the real clock
	d    durations
	s    store.Store
	q    *durable.Queue
	ev   *events
}

func newEnv(t *testing.T, h Harness) *env {
	e := &env{t: t, h: h, ctx: context.Background(), d: realDurations, ev: &events{}}
	if h.Mock {
		e.mock = clock.NewMock()
		e.mock.Set(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
		e.clk, e.d = e.mock, mockDurations
	} else {
		e.clk = clock.New()
	}
	e.s = h.New(t, e.clk)
	e.q = e.newQueue()
	return e
}

// newQueue returns a queue on e.s, closed by the test's cleanup.
func (e *env) newQueue() *durable.Queue {
	e.t.Helper()
	q, err := durable.New(e.s, durable.WithClock(e.clk), durable.WithMaxAttempts(queueMaxAttempts),
		durable.WithBackoff(func(int) time.Duration { return e.d.backoff }),
		durable.WithVisibilityTimeout(e.d.visibility), durable.WithStoreTimeout(5*time.Second),
		durable.WithObserver(e.ev), durable.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(e.t, err)
	e.t.Cleanup(func() { assert.NoError(e.t, q.Close()) })
	return q
}

// restart closes the queue, reopens the store and opens a queue on it.
func (e *env) restart() {
	e.t.Helper()
	require.NoError(e.t, e.q.Close())
	e.s = e.h.Reopen(e.t, e.s)
	e.q = e.newQueue()
}

// now is the queue's clock.
func (e *env) now() time.Time { return e.clk.Now() }

// advance moves the mock clock by d; on the real clock, time passes by
// itself, and the waits that follow wait for it.
func (e *env) advance(d time.Duration) {
	if e.mock != nil {
		e.mock.Add(d)
	}
}

func (e *env) enqueue(msgs ...durable.Message) {
	e.t.Helper()
	require.NoError(e.t, e.q.Enqueue(e.ctx, msgs...))
}

func (e *env) get(id string) durable.Info {
	e.t.Helper()
	info, err := e.q.Get(e.ctx, id)
	require.NoError(e.t, err, "Get(%q)", id)
	return info
}

// waitInfo waits until the message id is as ok says, and returns it.
func (e *env) waitInfo(id, what string, ok func(durable.Info) bool) durable.Info {
	e.t.Helper()
	var info durable.Info
	var err error
	deadline := time.Now().Add(bound)
	for {
		info, err = e.q.Get(e.ctx, id)
		if err == nil && ok(info) {
			return info
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: not after %v; Get(%q) = %+v, %v", what, bound, id, info, err)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitState waits until the message id is in state st with attempt.
func (e *env) waitState(id string, st durable.State, attempt int) durable.Info {
	e.t.Helper()
	return e.waitInfo(id, fmt.Sprintf("%s %v at attempt %d", id, st, attempt), func(i durable.Info) bool {
		return i.State == st && i.Attempt == attempt
	})
}

// waitGone waits until the message id is acked.
func (e *env) waitGone(id string) {
	e.t.Helper()
	deadline := time.Now().Add(bound)
	for {
		info, err := e.q.Get(e.ctx, id)
		if errors.Is(err, durable.ErrNotFound) {
			return
		}
		require.NoError(e.t, err)
		if time.Now().After(deadline) {
			e.t.Fatalf("%s not acked after %v: %+v", id, bound, info)
		}
		time.Sleep(time.Millisecond)
	}
}

// afterRetries lets the back-off of the messages ids pass, once their
// attempt numbered attempt failed. On the mock clock it waits until each
// is pending again (its retry written, with the due time it computed),
// then moves the clock by the back-off. On the real clock the back-off
// passes by itself: a message is pending only during it, too short a
// window to wait for.
func (e *env) afterRetries(attempt int, ids ...string) {
	e.t.Helper()
	if e.mock == nil {
		return
	}
	for _, id := range ids {
		e.waitState(id, durable.Pending, attempt)
	}
	e.advance(e.d.backoff)
}

// receive returns the next delivery, which must come within bound.
func (e *env) receive() *durable.Delivery {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, bound)
	defer cancel()
	d, err := e.q.Receive(ctx)
	require.NoError(e.t, err, "no delivery within %v", bound)
	return d
}

// run starts e.q.Run with h, stopped (and its error checked) by the
// test's cleanup or by the returned function.
func (e *env) run(workers int, h durable.Handler) (stop func()) {
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	q := e.q
	go func() { done <- q.Run(ctx, workers, h) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				assert.NoError(e.t, err, "Run")
			case <-time.After(bound):
				e.t.Errorf("Run did not return within %v of its ctx ending", bound)
			}
		})
	}
	e.t.Cleanup(stop)
	return stop
}

// log is what handlers saw, in order, safe for concurrent use.
type log[T any] struct {
	mu    sync.Mutex
	items []T
}

func (l *log[T]) add(v T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.items = append(l.items, v)
}

func (l *log[T]) all() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.items)
}

// wait waits until l has at least n items, and returns them.
func (l *log[T]) wait(t *testing.T, n int, what string) []T {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		items := l.all()
		if len(items) >= n {
			return items
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d of %d after %v: %+v", what, len(items), n, bound, items)
		}
		time.Sleep(time.Millisecond)
	}
}

// events records the queue's events.
type events struct{ log[durable.Event] }

func (ev *events) Observe(e durable.Event) { ev.add(e) }

// wait waits until there are at least n events of kind k about the
// message id (a queue reports an event after its store call returned),
// and returns them.
func (ev *events) wait(t *testing.T, k durable.EventKind, id string, n int) []durable.Event {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		got := ev.of(k, id)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d %v events of %s after %v, want %d", len(got), k, id, bound, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// of returns the events of kind k about the message id.
func (ev *events) of(k durable.EventKind, id string) []durable.Event {
	var out []durable.Event
	for _, e := range ev.all() {
		if e.Kind == k && e.ID == id {
			out = append(out, e)
		}
	}
	return out
}

// requireKinds checks that every event about one of the messages of
// kinds (ID to Kind) carries its Kind.
func (e *env) requireKinds(kinds map[string]string) {
	e.t.Helper()
	for _, ev := range e.ev.all() {
		if want, ok := kinds[ev.ID]; ok {
			assert.Equal(e.t, want, ev.MessageKind, "the kind of %v", ev)
		}
	}
}

// The payloads of the scenarios' kinds.
type (
	closeOrder struct {
		Order  string `json:"order"`
		Amount int    `json:"amount"`
	}
	remind struct {
		Order   string `json:"order"`
		Minutes int    `json:"minutes"`
	}
)

var (
	closeKind  = durable.NewKind[closeOrder]("order.close")
	remindKind = durable.NewKind[remind]("order.remind")
)

// message returns the message of k with ID id and payload v, due at due.
func message[T any](e *env, k durable.Kind[T], id string, v T, due time.Time) durable.Message {
	e.t.Helper()
	m, err := k.Message(id, v, due)
	require.NoError(e.t, err)
	return m
}

// routesTwoKinds: a Mux gives each delivery to the handler of its kind,
// with its payload decoded, and every event about a message says its kind.
func routesTwoKinds(e *env) {
	now := e.now()
	e.enqueue(
		message(e, closeKind, "close-1", closeOrder{"o1", 100}, now),
		message(e, remindKind, "remind-1", remind{"o1", 5}, now),
		message(e, closeKind, "close-2", closeOrder{"o2", 250}, now),
		message(e, remindKind, "remind-2", remind{"o2", 10}, now),
	)
	var seen log[string]
	mux := durable.NewMux()
	durable.Register(mux, closeKind, func(_ context.Context, d *durable.Delivery, v closeOrder) error {
		seen.add(fmt.Sprintf("%s %s: close %s %d", d.Kind, d.ID, v.Order, v.Amount))
		return nil
	})
	durable.Register(mux, remindKind, func(_ context.Context, d *durable.Delivery, v remind) error {
		seen.add(fmt.Sprintf("%s %s: remind %s %dm", d.Kind, d.ID, v.Order, v.Minutes))
		return nil
	})
	stop := e.run(4, mux.Handle)
	got := seen.wait(e.t, 4, "handled")
	for _, id := range []string{"close-1", "close-2", "remind-1", "remind-2"} {
		e.waitGone(id)
	}
	stop()
	slices.Sort(got)
	assert.Equal(e.t, []string{
		"order.close close-1: close o1 100",
		"order.close close-2: close o2 250",
		"order.remind remind-1: remind o1 5m",
		"order.remind remind-2: remind o2 10m",
	}, got)
	kinds := map[string]string{"close-1": "order.close", "close-2": "order.close", "remind-1": "order.remind", "remind-2": "order.remind"}
	for id := range kinds {
		for _, k := range []durable.EventKind{durable.EventEnqueued, durable.EventDelivered, durable.EventHandled, durable.EventAcked} {
			assert.Len(e.t, e.ev.of(k, id), 1, "%v events of %s", k, id)
		}
	}
	e.requireKinds(kinds)
}

// deadAtOnce: a delivery of a kind without a handler, and one whose
// payload does not decode, go to the dead letters at their first attempt,
// with their texts; once the kind has a handler, Requeue brings the first
// back and it is handled.
func deadAtOnce(e *env) {
	now := e.now()
	e.enqueue(
		durable.Message{ID: "stranger", Kind: "invoice.send", Payload: []byte(`{"invoice":7}`), Due: now},
		durable.Message{ID: "garbled", Kind: closeKind.Name(), Payload: []byte("not json"), Due: now},
	)
	var closed, sent log[string]
	mux := durable.NewMux()
	durable.Register(mux, closeKind, func(_ context.Context, d *durable.Delivery, _ closeOrder) error {
		closed.add(d.ID)
		return nil
	})
	e.run(2, mux.Handle)

	stranger := e.waitState("stranger", durable.Dead, 1)
	assert.Contains(e.t, stranger.LastError, `no handler for kind "invoice.send"`)
	garbled := e.waitState("garbled", durable.Dead, 1)
	decodeErr := json.Unmarshal([]byte("not json"), new(closeOrder))
	require.Error(e.t, decodeErr)
	assert.Contains(e.t, garbled.LastError, decodeErr.Error(), "the decoding error")
	assert.Contains(e.t, garbled.LastError, durable.ErrBadPayload.Error())
	assert.Empty(e.t, closed.all(), "the handler of order.close never saw the payload that does not decode")
	for _, id := range []string{"stranger", "garbled"} {
		assert.Len(e.t, e.ev.wait(e.t, durable.EventDead, id, 1), 1, "%s died once", id)
		assert.Empty(e.t, e.ev.of(durable.EventRetried, id), "%s was not retried", id)
	}

	// The handler comes (here while Run runs), and the dead message with it.
	mux.HandleFunc("invoice.send", func(_ context.Context, d *durable.Delivery) error {
		sent.add(fmt.Sprintf("%s %s", d.ID, d.Payload))
		return nil
	})
	require.NoError(e.t, e.q.Requeue(e.ctx, "stranger", time.Time{}))
	assert.Equal(e.t, []string{`stranger {"invoice":7}`}, sent.wait(e.t, 1, "the requeued message handled"))
	e.waitGone("stranger")
	e.requireKinds(map[string]string{"stranger": "invoice.send", "garbled": "order.close"})
}

// attempt is what a handler saw of a delivery, and when.
type attempt struct {
	id        string
	attempt   int
	lastError string
	at        time.Time
}

// maxAttemptsByFailures: a message with MaxAttempts 2 dies after two
// failed attempts, though the queue allows 10; one without goes on.
func maxAttemptsByFailures(e *env) {
	now := e.now()
	e.enqueue(
		durable.Message{ID: "twice", Kind: "k", Payload: []byte("p"), Due: now, MaxAttempts: 2},
		durable.Message{ID: "plain", Kind: "k", Payload: []byte("p"), Due: now},
	)
	var seen log[attempt]
	stop := e.run(2, func(_ context.Context, d *durable.Delivery) error {
		seen.add(attempt{id: d.ID, attempt: d.Attempt, lastError: d.LastError})
		return fmt.Errorf("boom %d", d.Attempt)
	})
	seen.wait(e.t, 2, "first attempts")
	e.afterRetries(1, "twice", "plain")
	seen.wait(e.t, 4, "second attempts")
	twice := e.waitState("twice", durable.Dead, 2)
	assert.Equal(e.t, "boom 2", twice.LastError)
	assert.Equal(e.t, 2, twice.MaxAttempts)
	stop()
	// The other goes on: on the real clock, Run may have tried it again.
	plain := e.get("plain")
	assert.Equal(e.t, durable.Pending, plain.State, "plain, with the queue's MaxAttempts")
	if e.mock != nil {
		assert.Equal(e.t, 2, plain.Attempt)
	} else {
		assert.GreaterOrEqual(e.t, plain.Attempt, 2)
	}

	var attempts []int
	for _, a := range seen.all() {
		if a.id == "twice" {
			attempts = append(attempts, a.attempt)
		}
	}
	assert.Equal(e.t, []int{1, 2}, attempts, "the attempts of twice")
	assert.Len(e.t, e.ev.of(durable.EventDead, "twice"), 1)
	assert.Empty(e.t, e.ev.of(durable.EventDead, "plain"))
}

// maxAttemptsByExpiry: a message with MaxAttempts 2 dies when the lease
// of its second attempt expires, though the queue allows 10; one without
// goes on.
func maxAttemptsByExpiry(e *env) {
	now := e.now()
	e.enqueue(
		durable.Message{ID: "twice", Kind: "k", Payload: []byte("p"), Due: now, MaxAttempts: 2},
		durable.Message{ID: "plain", Kind: "k", Payload: []byte("p"), Due: now},
	)
	for round := 1; round <= 2; round++ {
		got := map[string]int{}
		for range 2 {
			d := e.receive() // and left to expire
			got[d.ID] = d.Attempt
		}
		require.Equal(e.t, map[string]int{"twice": round, "plain": round}, got, "round %d", round)
		e.advance(e.d.visibility + time.Millisecond)
		if round == 1 {
			for _, id := range []string{"twice", "plain"} {
				info := e.waitState(id, durable.Pending, 1)
				assert.Equal(e.t, durable.LeaseExpired, info.LastError)
			}
			e.advance(e.d.backoff)
		}
	}
	twice := e.waitInfo("twice", "twice dead at attempt 2, by its MaxAttempts (does the store's Expired give "+
		"each lease's MaxAttempts? storetest's rule Fields/ExpiredCarriesMaxAttempts)", func(i durable.Info) bool {
		return i.State == durable.Dead && i.Attempt == 2
	})
	assert.Equal(e.t, durable.LeaseExpired, twice.LastError)
	assert.Equal(e.t, 2, twice.MaxAttempts)
	plain := e.waitState("plain", durable.Pending, 2)
	assert.Equal(e.t, durable.LeaseExpired, plain.LastError)
}

// timeoutEndsCtx: the handler's ctx of a message with a Timeout ends
// Timeout after the hand-out, with context.DeadlineExceeded; the handler
// that returns that error failed an ordinary attempt, retried.
func timeoutEndsCtx(e *env) {
	e.enqueue(durable.Message{ID: "slow", Kind: "k", Payload: []byte("p"), Due: e.now(), Timeout: e.d.timeout})
	type started struct {
		attempt     int
		lastError   string
		ctx         context.Context
		at          time.Time // when the handler started
		deadline    time.Time // ctx's
		hasDeadline bool
		ended       time.Time // when ctx ended, by the handler's reading
		ctxErr      error     // then
	}
	var seen log[started]
	ended := make(chan started, 2)
	e.run(1, func(ctx context.Context, d *durable.Delivery) error {
		s := started{attempt: d.Attempt, ctx: ctx, at: e.now(), lastError: d.LastError}
		s.deadline, s.hasDeadline = ctx.Deadline()
		seen.add(s)
		if d.Attempt > 1 {
			return nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(2 * bound): // never hang: the test fails first
			return errors.New("the handler's ctx did not end")
		}
		s.ended, s.ctxErr = e.now(), ctx.Err()
		ended <- s
		return ctx.Err()
	})
	first := seen.wait(e.t, 1, "the first attempt")[0]
	require.True(e.t, first.hasDeadline, "the handler's ctx has a deadline")
	if e.mock != nil {
		// The mock clock did not move since the hand-out.
		assert.WithinDuration(e.t, first.at.Add(e.d.timeout), first.deadline, 0, "Timeout after the hand-out")
		e.advance(e.d.timeout - time.Nanosecond)
		require.NoError(e.t, first.ctx.Err(), "a nanosecond before the Timeout")
		e.advance(time.Nanosecond)
	} else {
		assert.WithinRange(e.t, first.deadline, first.at.Add(-time.Second), first.at.Add(e.d.timeout),
			"Timeout after the hand-out, which came before the handler started")
	}
	var s started
	select {
	case s = <-ended:
	case <-time.After(bound):
		e.t.Fatalf("the handler's ctx did not end %v after the Timeout", bound)
	}
	assert.Equal(e.t, context.DeadlineExceeded, s.ctxErr)
	assert.False(e.t, s.ended.Before(first.deadline), "ended at %v, before the deadline %v", s.ended, first.deadline)

	// An ordinary failure: retried after the back-off, with its text.
	e.afterRetries(1, "slow")
	second := seen.wait(e.t, 2, "the second attempt")[1]
	assert.Equal(e.t, 2, second.attempt)
	assert.Equal(e.t, context.DeadlineExceeded.Error(), second.lastError)
	e.waitGone("slow")
}

// snoozeKeeps: a handler that snoozes brings its message back after the
// delay with the same Attempt and LastError; then it is handled.
func snoozeKeeps(e *env) {
	e.enqueue(durable.Message{ID: "later", Kind: "k", Payload: []byte("p"), Due: e.now()})
	var seen log[attempt]
	var snoozedAt log[time.Time]
	e.run(1, func(_ context.Context, d *durable.Delivery) error {
		seen.add(attempt{id: d.ID, attempt: d.Attempt, lastError: d.LastError, at: e.now()})
		switch len(seen.all()) {
		case 1:
			return errors.New("boom")
		case 2:
			snoozedAt.add(e.now())
			return fmt.Errorf("not yet: %w", durable.Snooze(e.d.snooze))
		}
		return nil
	})
	seen.wait(e.t, 1, "the first attempt")
	e.afterRetries(1, "later")
	at := snoozedAt.wait(e.t, 1, "the snooze")[0]
	// Snoozed: pending again, the attempt taken back (the next claim
	// counts it again), its LastError kept, due after the delay. On the
	// real clock, the message may be back before Get sees it pending.
	info := e.waitInfo("later", "snoozed", func(i durable.Info) bool {
		return i.State == durable.Pending && i.Attempt == 1 || e.mock == nil && len(seen.all()) == 3
	})
	if info.State == durable.Pending {
		assert.Equal(e.t, "boom", info.LastError)
		if e.mock != nil {
			assert.WithinDuration(e.t, at.Add(e.d.snooze), info.Due, 0, "due the delay after the snooze")
		} else {
			assert.False(e.t, info.Due.Before(at.Add(e.d.snooze-e.d.slack)), "due %v, the delay after %v", info.Due, at)
		}
	}
	if e.mock != nil {
		e.advance(e.d.snooze - 100*time.Millisecond)
		assert.Len(e.t, seen.all(), 2, "not back before the delay")
		e.advance(100 * time.Millisecond)
	}
	all := seen.wait(e.t, 3, "back after the snooze")
	e.waitGone("later")
	assert.Equal(e.t, []int{1, 2, 2}, []int{all[0].attempt, all[1].attempt, all[2].attempt}, "the attempts")
	assert.Equal(e.t, []string{"", "boom", "boom"}, []string{all[0].lastError, all[1].lastError, all[2].lastError}, "the LastErrors")
	assert.False(e.t, all[2].at.Before(at.Add(e.d.snooze-e.d.slack)), "back at %v, the delay after %v", all[2].at, at)
	snoozed := e.ev.wait(e.t, durable.EventSnoozed, "later", 1)
	require.Len(e.t, snoozed, 1)
	assert.Equal(e.t, durable.Event{Kind: durable.EventSnoozed, ID: "later", MessageKind: "k", N: 1, Attempt: 2}, snoozed[0])
	assert.Len(e.t, e.ev.of(durable.EventRetried, "later"), 1, "the failure, not the snooze")
}

// fieldsKept: Kind, MaxAttempts and Timeout travel with the message: an
// Enqueue of its ID replaces them, and retries, a restart and Requeue keep
// them; the message's MaxAttempts decides its death after all that.
func fieldsKept(e *env) {
	now := e.now()
	e.enqueue(durable.Message{ID: "f", Kind: "old.kind", Payload: []byte("v1"), Due: now.Add(time.Hour),
		MaxAttempts: 5, Timeout: time.Hour})
	m := durable.Message{ID: "f", Kind: "new.kind", Payload: []byte("v2"), Due: now, MaxAttempts: 2,
		Timeout: e.d.timeout + 7*time.Microsecond}
	e.enqueue(m) // replaces them
	requireFields := func(what, kind string, maxAttempts int, timeout time.Duration) {
		e.t.Helper()
		assert.Equal(e.t, []any{m.Kind, m.MaxAttempts, m.Timeout}, []any{kind, maxAttempts, timeout}, what)
	}
	info := e.get("f")
	requireFields("replaced", info.Kind, info.MaxAttempts, info.Timeout)

	d := e.receive()
	requireFields("the first delivery", d.Kind, d.MaxAttempts, d.Timeout)
	assert.Equal(e.t, "v2", string(d.Payload))
	// A consumer of Receive bounds its attempt with AttemptContext.
	before := e.now()
	ctx, cancel := d.AttemptContext(e.ctx)
	deadline, ok := ctx.Deadline()
	cancel()
	require.True(e.t, ok, "AttemptContext has the Timeout's deadline")
	if e.mock != nil {
		assert.WithinDuration(e.t, before.Add(m.Timeout), deadline, 0)
	} else {
		assert.WithinRange(e.t, deadline, before.Add(m.Timeout-time.Second), before.Add(m.Timeout))
	}
	require.NoError(e.t, d.RetryWithError(e.ctx, 0, errors.New("first")))
	info = e.waitState("f", durable.Pending, 1)
	requireFields("retried", info.Kind, info.MaxAttempts, info.Timeout)

	e.restart()
	info = e.get("f")
	requireFields("after a restart", info.Kind, info.MaxAttempts, info.Timeout)
	e.advance(e.d.backoff)
	d = e.receive()
	assert.Equal(e.t, 2, d.Attempt)
	assert.Equal(e.t, "first", d.LastError)
	requireFields("the second delivery, after the restart", d.Kind, d.MaxAttempts, d.Timeout)
	require.NoError(e.t, d.Retry(e.ctx, 0))
	info = e.waitState("f", durable.Dead, 2) // its MaxAttempts, not the queue's 10
	requireFields("dead", info.Kind, info.MaxAttempts, info.Timeout)

	require.NoError(e.t, e.q.Requeue(e.ctx, "f", time.Time{}))
	info = e.get("f")
	requireFields("requeued", info.Kind, info.MaxAttempts, info.Timeout)
	d = e.receive()
	assert.Equal(e.t, 1, d.Attempt)
	requireFields("the delivery after Requeue", d.Kind, d.MaxAttempts, d.Timeout)
	require.NoError(e.t, d.Ack(e.ctx))
}
