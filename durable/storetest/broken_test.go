package storetest_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable/memstore"
	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/seed64e23a5c/timingwheel/durable/storetest"
)

// The suite is the proof that a store keeps the contract only if it
// fails stores that break it. TestBrokenStores runs it against stores
// that each break one rule (wrappers of memstore) and requires each run
// to fail, in the rule that the breakage is about: each in a process of
// its own (this test binary, running TestBrokenStoreChild), since a
// failing subtest of testing.T cannot be caught in the process.

// brokenEnv names the broken store TestBrokenStoreChild runs the suite on.
const brokenEnv = "STORETEST_BROKEN_STORE"

// A brokenStore is a store that breaks one rule.
type brokenStore struct {
	name string
	// wrap makes the broken store from a handle on memstore.
	wrap func(s *memstore.Store) store.Store
	// caughtBy is the subtest (Group/Rule) that must fail.
	caughtBy string
	// realClock runs the suite on the real clock, only the rule
	// caughtBy, runs times; lostOnReopen makes Reopen lose everything.
	realClock    bool
	runs         int
	lostOnReopen bool
}

var brokenStores = []brokenStore{
	{name: "lease counted expired 1 ms early", wrap: newEarlyExpiry, caughtBy: "Expired/NeverBeforeDeadline"},
	{name: "claim race with a horizon", wrap: newHorizonRace, caughtBy: "Claim/ConcurrentClaimersWithAHorizonNeverShare"},
	{name: "AdvanceSeries after Close works", wrap: newAfterClose, caughtBy: "Close/OptionalInterfacesToo"},
	{name: "SetPaused after Close works", wrap: newPauseAfterClose, caughtBy: "Close/OptionalInterfacesToo"},
	{name: "refused series step still cancels", wrap: newRefusedCancels, caughtBy: "Series/RefusedStepCancelsNothing"},
	{name: "series times kept to the µs", wrap: newSeriesMicros, caughtBy: "Series/TimesToTheNanosecond"},
	{name: "ctx ignored", wrap: newCtxIgnored, caughtBy: "Context/DoneWritesNothing"},
	{name: "Enqueue batch not all-or-none", wrap: newChunkedEnqueue, caughtBy: "Enqueue/LargeBatchAllOrNone"},
	{name: "equal-due order broken after Requeue", wrap: newRequeueOrder, caughtBy: "Requeue/EqualDueKeepsWriteOrder"},
	{name: "Confirm across handles ignored", wrap: newLocalConfirm, caughtBy: "Handles/ConfirmAndCancelAcross"},
	{name: "Unhanded ignored", wrap: newUnhandedIgnored, caughtBy: "Retry/UnhandedTakesBackTheAttempt"},
	{name: "Held not reported", wrap: newHeldHidden, caughtBy: "Expired/ReportsHeld"},
	{name: "HeldLease ignored", wrap: newHeldLeaseIgnored, caughtBy: "Claim/HeldLeaseForTheHeld"},
	{name: "due held beyond Limit-Held", wrap: newDueHeld, caughtBy: "Claim/DueAreHandedOutWhateverHeld"},
	{name: "HeldLease ignored, one shard", wrap: newOneShardHeldLeaseIgnored, caughtBy: "Claim/HeldLeaseForTheHeld"},
	{name: "HeldLease for every lease ahead", wrap: newAllAheadHeld, caughtBy: "Claim/HeldOnlyBeyondTheFirstLimitMinusHeld"},
	{name: "held counted from the leases found", wrap: newHeldOfFound, caughtBy: "Claim/HeldCountFromLimitNotFromWhatWasFound"},
	{name: "Confirm's By ignored", wrap: newConfirmByIgnored, caughtBy: "Confirm/ByMovesTheDeadline"},
	{name: "Kind lost", wrap: newKindLost, caughtBy: "Fields/KeptInEveryState"},
	{name: "data lost on Reopen", wrap: plain, lostOnReopen: true, caughtBy: "Restart/KeepsEveryState"},
	{name: "deliveries 1 ms early (real clock)", wrap: newEarlyDelivery, caughtBy: "Claim/NeverBeforeDue", realClock: true, runs: 20},
}

func TestBrokenStores(t *testing.T) {
	if os.Getenv(brokenEnv) != "" {
		t.Skip("in a child")
	}
	failLine := regexp.MustCompile(`--- FAIL: TestBrokenStoreChild/([^ ]+)`)
	rows := make([]string, len(brokenStores))
	t.Run("each", func(t *testing.T) {
		for i, b := range brokenStores {
			t.Run(strings.ReplaceAll(b.name, " ", "_"), func(t *testing.T) {
				t.Parallel()
				args := []string{"-test.run=^TestBrokenStoreChild$", "-test.count=1", "-test.timeout=5m"}
				if b.realClock {
					group, rule, _ := strings.Cut(b.caughtBy, "/")
					args = []string{"-test.run=^TestBrokenStoreChild$/^" + group + "$/^" + rule + "$", fmt.Sprintf("-test.count=%d", b.runs), "-test.timeout=5m"}
				}
				cmd := exec.Command(os.Args[0], args...)
				cmd.Env = append(os.Environ(), brokenEnv+"="+b.name)
				out, err := cmd.CombinedOutput()
				require.Error(t, err, "the suite passed a store whose %s:\n%s", b.name, out)
				var caught []string
				n := 0
				for _, m := range failLine.FindAllStringSubmatch(string(out), -1) {
					if strings.Count(m[1], "/") != 1 {
						continue // a group
					}
					if m[1] == b.caughtBy {
						n++
					}
					if !slices.Contains(caught, m[1]) {
						caught = append(caught, m[1])
					}
				}
				require.Contains(t, caught, b.caughtBy, "%s: output:\n%s", b.name, out)
				if b.realClock {
					require.Equal(t, b.runs, n, "%s: caught in %d runs of %d", b.name, n, b.runs)
					rows[i] = fmt.Sprintf("%-40s | %d runs of %d: %s", b.name, n, b.runs, b.caughtBy)
					return
				}
				rows[i] = fmt.Sprintf("%-40s | %s", b.name, strings.Join(caught, ", "))
			})
		}
	})
	t.Logf("rule broken (memstore wrapper) | subtests that failed (the one the rule is about among them)\n%s", strings.Join(rows, "\n"))
}

// TestBrokenStoreChild runs the suite on the broken store named by
// brokenEnv, for TestBrokenStores.
func TestBrokenStoreChild(t *testing.T) {
	name := os.Getenv(brokenEnv)
	if name == "" {
		t.Skip("run by TestBrokenStores")
	}
	i := slices.IndexFunc(brokenStores, func(b brokenStore) bool { return b.name == name })
	require.GreaterOrEqual(t, i, 0, name)
	b := brokenStores[i]
	var c clock.Clock
	mock := clock.NewMock()
	mock.Set(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	if !b.realClock {
		c = mock
	}
	var (
		mu    sync.Mutex
		inner = map[store.Store]*memstore.Store{}
	)
	open := func(t *testing.T, m *memstore.Store) store.Store {
		s := b.wrap(m)
		t.Cleanup(func() { _ = s.Close() })
		mu.Lock()
		defer mu.Unlock()
		inner[s] = m
		return s
	}
	handle := func(s store.Store) *memstore.Store {
		mu.Lock()
		defer mu.Unlock()
		return inner[s]
	}
	h := storetest.Harness{
		New: func(t *testing.T) store.Store { return open(t, memstore.New(c)) },
		Reopen: func(t *testing.T, s store.Store) store.Store {
			assert.NoError(t, s.Close())
			if b.lostOnReopen {
				return open(t, memstore.New(c))
			}
			return open(t, handle(s).Handle())
		},
		Second: func(t *testing.T, s store.Store) store.Store { return open(t, handle(s).Handle()) },
	}
	if !b.realClock {
		h.Now, h.Advance = mock.Now, mock.Add
	}
	storetest.Run(t, h)
}

func plain(s *memstore.Store) store.Store { return s }

// earlyExpiry counts a lease expired 1 ms before its deadline.
type earlyExpiry struct {
	*memstore.Store
	mu     sync.Mutex
	tokens map[string]uint64
}

func newEarlyExpiry(s *memstore.Store) store.Store {
	return &earlyExpiry{Store: s, tokens: map[string]uint64{}}
}

func (s *earlyExpiry) early() time.Time { return s.Clock().Now().Add(time.Millisecond) }

func (s *earlyExpiry) Claim(ctx context.Context, p store.ClaimParams) (store.Claimed, error) {
	c, err := s.Store.Claim(ctx, p)
	s.mu.Lock()
	for _, l := range c.Leases {
		s.tokens[l.ID] = l.Token
	}
	s.mu.Unlock()
	return c, err
}

func (s *earlyExpiry) Expired(ctx context.Context, limit int) (store.ExpiredLeases, error) {
	x, err := s.Store.Expired(ctx, limit)
	if err != nil {
		return x, err
	}
	infos, _, err := s.List(ctx, store.ListParams{State: store.InFlight, Limit: 1000})
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, info := range infos {
		if len(x.Leases) < limit && info.Deadline.After(x.Now) && !info.Deadline.After(s.early()) {
			x.Leases = append(x.Leases, store.ExpiredLease{ID: info.ID, Token: s.tokens[info.ID], Attempt: info.Attempt, Deadline: info.Deadline})
		}
	}
	return x, err
}

func (s *earlyExpiry) Retry(ctx context.Context, p store.RetryParams) error {
	if info, err := s.Get(ctx, p.Lease.ID); p.Expired && err == nil && !info.Deadline.After(s.early()) {
		p.Expired = false
	}
	return s.Store.Retry(ctx, p)
}

// horizonRace hands a lease claimed ahead to a second claimer when two
// claims with a horizon and a short lease run at once.
type horizonRace struct {
	*memstore.Store
	active atomic.Int64
	mu     sync.Mutex
	last   *store.Lease
}

func newHorizonRace(s *memstore.Store) store.Store { return &horizonRace{Store: s} }

func (s *horizonRace) Claim(ctx context.Context, p store.ClaimParams) (store.Claimed, error) {
	n := s.active.Add(1)
	defer s.active.Add(-1)
	c, err := s.Store.Claim(ctx, p)
	if err != nil || p.Ahead <= 0 || p.Lease >= time.Second {
		return c, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n > 1 && s.last != nil && len(c.Leases) < p.Limit {
		c.Leases = append(c.Leases, *s.last)
	}
	for i := range c.Leases {
		if c.Leases[i].Ahead {
			s.last = &c.Leases[i]
		}
	}
	return c, nil
}

// afterClose lets AdvanceSeries (series) or SetPaused (pause) work after
// Close, through a handle it keeps.
type afterClose struct {
	*memstore.Store
	spare  *memstore.Store
	closed atomic.Bool
	pause  bool
}

func newAfterClose(s *memstore.Store) store.Store { return &afterClose{Store: s, spare: s.Handle()} }

func newPauseAfterClose(s *memstore.Store) store.Store {
	return &afterClose{Store: s, spare: s.Handle(), pause: true}
}

func (s *afterClose) Close() error { s.closed.Store(true); return s.Store.Close() }

func (s *afterClose) AdvanceSeries(ctx context.Context, p store.SeriesStep) (store.Series, bool, error) {
	if s.closed.Load() && !s.pause {
		return s.spare.AdvanceSeries(ctx, p)
	}
	return s.Store.AdvanceSeries(ctx, p)
}

func (s *afterClose) SetPaused(ctx context.Context, paused bool) error {
	if s.closed.Load() && s.pause {
		return s.spare.SetPaused(ctx, paused)
	}
	return s.Store.SetPaused(ctx, paused)
}

// refusedCancels cancels what a series step names before it checks the
// step.
type refusedCancels struct{ *memstore.Store }

func newRefusedCancels(s *memstore.Store) store.Store { return refusedCancels{s} }

func (s refusedCancels) AdvanceSeries(ctx context.Context, p store.SeriesStep) (store.Series, bool, error) {
	if p.Cancel != "" {
		if _, err := s.Cancel(ctx, p.Cancel); err != nil && err != store.ErrInFlight {
			return store.Series{}, false, err
		}
	}
	return s.Store.AdvanceSeries(ctx, p)
}

// seriesMicros keeps a series' times to the microsecond.
type seriesMicros struct{ *memstore.Store }

func newSeriesMicros(s *memstore.Store) store.Store { return seriesMicros{s} }

func (s seriesMicros) AdvanceSeries(ctx context.Context, p store.SeriesStep) (store.Series, bool, error) {
	p.ExpectLast = p.ExpectLast.Truncate(time.Microsecond)
	p.Last, p.Next = p.Last.Truncate(time.Microsecond), p.Next.Truncate(time.Microsecond)
	return s.Store.AdvanceSeries(ctx, p)
}

// ctxIgnored writes whatever its ctx.
type ctxIgnored struct{ *memstore.Store }

func newCtxIgnored(s *memstore.Store) store.Store { return ctxIgnored{s} }

var bg = context.Background()

func (s ctxIgnored) Enqueue(_ context.Context, m []store.Message) error {
	return s.Store.Enqueue(bg, m)
}
func (s ctxIgnored) Cancel(_ context.Context, id string) (bool, error) { return s.Store.Cancel(bg, id) }
func (s ctxIgnored) Claim(_ context.Context, p store.ClaimParams) (store.Claimed, error) {
	return s.Store.Claim(bg, p)
}
func (s ctxIgnored) Confirm(_ context.Context, p store.ConfirmParams) error {
	return s.Store.Confirm(bg, p)
}
func (s ctxIgnored) Ack(_ context.Context, l store.LeaseRef) error      { return s.Store.Ack(bg, l) }
func (s ctxIgnored) Retry(_ context.Context, p store.RetryParams) error { return s.Store.Retry(bg, p) }
func (s ctxIgnored) Extend(_ context.Context, p store.ExtendParams) error {
	return s.Store.Extend(bg, p)
}
func (s ctxIgnored) Requeue(_ context.Context, p store.RequeueParams) error {
	return s.Store.Requeue(bg, p)
}
func (s ctxIgnored) SetPaused(_ context.Context, p bool) error { return s.Store.SetPaused(bg, p) }

// chunkedEnqueue writes a batch 1000 messages at a time.
type chunkedEnqueue struct{ *memstore.Store }

func newChunkedEnqueue(s *memstore.Store) store.Store { return chunkedEnqueue{s} }

func (s chunkedEnqueue) Enqueue(ctx context.Context, msgs []store.Message) error {
	for len(msgs) > 0 {
		n := min(len(msgs), 1000)
		if err := s.Store.Enqueue(ctx, msgs[:n]); err != nil {
			return err
		}
		msgs = msgs[n:]
	}
	return nil
}

// requeueOrder puts a requeued message before the ones requeued to the
// same instant earlier (it keeps each a nanosecond earlier than the last,
// and Get hides it).
type requeueOrder struct {
	*memstore.Store
	mu   sync.Mutex
	k    time.Duration
	back map[string]time.Duration
}

func newRequeueOrder(s *memstore.Store) store.Store {
	return &requeueOrder{Store: s, back: map[string]time.Duration{}}
}

func (s *requeueOrder) Requeue(ctx context.Context, p store.RequeueParams) error {
	if p.Due.IsZero() {
		return s.Store.Requeue(ctx, p)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.k += time.Nanosecond
	s.back[p.ID] = s.k
	p.Due = p.Due.Add(-s.k)
	return s.Store.Requeue(ctx, p)
}

func (s *requeueOrder) Get(ctx context.Context, id string) (store.Info, error) {
	info, err := s.Store.Get(ctx, id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil && info.State == store.Pending {
		info.Due = info.Due.Add(s.back[id])
	}
	return info, err
}

// localConfirm keeps a Confirm in the handle that made it, as if every
// holder and every Cancel were in one process: another handle's Cancel
// takes a confirmed lease back.
type localConfirm struct {
	*memstore.Store
	mu        sync.Mutex
	confirmed map[store.LeaseRef]bool
}

func newLocalConfirm(s *memstore.Store) store.Store {
	return &localConfirm{Store: s, confirmed: map[store.LeaseRef]bool{}}
}

func (s *localConfirm) Confirm(ctx context.Context, p store.ConfirmParams) error {
	l := p.Lease
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, err := s.Stats(ctx); err == nil && st.Paused {
		return s.Store.Confirm(ctx, p) // ErrPaused for one held
	}
	info, err := s.Get(ctx, l.ID)
	if err != nil || info.State != store.InFlight {
		return store.ErrLeaseLost
	}
	if err := s.Store.Extend(ctx, store.ExtendParams{Lease: l, By: time.Until(info.Deadline)}); err != nil {
		return err // not the current lease
	}
	s.confirmed[l] = true
	return nil
}

func (s *localConfirm) Cancel(ctx context.Context, id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for l := range s.confirmed {
		if l.ID == id {
			if info, err := s.Get(ctx, id); err == nil && info.State == store.InFlight {
				return false, store.ErrInFlight
			}
		}
	}
	return s.Store.Cancel(ctx, id)
}

// earlyDelivery hands out a message up to 1 ms before its due time.
type earlyDelivery struct{ *memstore.Store }

func newEarlyDelivery(s *memstore.Store) store.Store { return earlyDelivery{s} }

func (s earlyDelivery) Claim(ctx context.Context, p store.ClaimParams) (store.Claimed, error) {
	p.Ahead += time.Millisecond
	c, err := s.Store.Claim(ctx, p)
	for i := range c.Leases {
		l := &c.Leases[i]
		if l.Ahead && !l.Due.After(c.Now.Add(time.Millisecond)) && s.Store.Confirm(ctx, store.ConfirmParams{Lease: l.Ref()}) == nil {
			l.Ahead = false
		}
	}
	return c, err
}

// unhandedIgnored ignores RetryParams.Unhanded: a lease given back
// unhandled keeps the attempt its claim counted.
type unhandedIgnored struct{ *memstore.Store }

func newUnhandedIgnored(s *memstore.Store) store.Store { return unhandedIgnored{s} }

func (s unhandedIgnored) Retry(ctx context.Context, p store.RetryParams) error {
	p.Unhanded = false
	return s.Store.Retry(ctx, p)
}

// heldHidden never reports an expired lease Held.
type heldHidden struct{ *memstore.Store }

func newHeldHidden(s *memstore.Store) store.Store { return heldHidden{s} }

func (s heldHidden) Expired(ctx context.Context, limit int) (store.ExpiredLeases, error) {
	x, err := s.Store.Expired(ctx, limit)
	for i := range x.Leases {
		x.Leases[i].Held = false
	}
	return x, err
}

// heldLeaseIgnored gives every lease of a claim ClaimParams.Lease.
type heldLeaseIgnored struct{ *memstore.Store }

func newHeldLeaseIgnored(s *memstore.Store) store.Store { return heldLeaseIgnored{s} }

func (s heldLeaseIgnored) Claim(ctx context.Context, p store.ClaimParams) (store.Claimed, error) {
	p.HeldLease = 0
	return s.Store.Claim(ctx, p)
}

// oneShardHeldLeaseIgnored is heldLeaseIgnored on a store.ShardedOrder of
// one shard, which may weaken no rule of the held leases.
type oneShardHeldLeaseIgnored struct{ heldLeaseIgnored }

func newOneShardHeldLeaseIgnored(s *memstore.Store) store.Store {
	return oneShardHeldLeaseIgnored{heldLeaseIgnored{s}}
}

func (oneShardHeldLeaseIgnored) Shard(string) int { return 0 }

// allAheadHeld holds every message a claim takes ahead of its due time,
// the first Limit-Held too.
type allAheadHeld struct{ *memstore.Store }

func newAllAheadHeld(s *memstore.Store) store.Store { return allAheadHeld{s} }

func (s allAheadHeld) Claim(ctx context.Context, p store.ClaimParams) (store.Claimed, error) {
	if p.HeldLease > 0 {
		p.Held = p.Limit
	}
	return s.Store.Claim(ctx, p)
}

// heldOfFound puts on HeldLease the leases ahead among the last Held of
// those a claim found, rather than beyond its first Limit-Held.
type heldOfFound struct{ *memstore.Store }

func newHeldOfFound(s *memstore.Store) store.Store { return heldOfFound{s} }

func (s heldOfFound) Claim(ctx context.Context, p store.ClaimParams) (store.Claimed, error) {
	c, err := s.Store.Claim(ctx, p)
	if err != nil || p.HeldLease <= 0 {
		return c, err
	}
	for i := range c.Leases {
		l := &c.Leases[i]
		if l.Ahead && i >= len(c.Leases)-p.Held && i < p.Limit-p.Held {
			if s.Store.Extend(ctx, store.ExtendParams{Lease: l.Ref(), By: l.Ready.Sub(c.Now) + p.HeldLease}) == nil {
				l.Deadline = l.Ready.Add(p.HeldLease)
			}
		}
	}
	return c, nil
}

// dueHeld says that the due messages beyond the first Limit-Held of a
// claim are held (Lease.Ahead), as the contract once had it.
type dueHeld struct{ *memstore.Store }

func newDueHeld(s *memstore.Store) store.Store { return dueHeld{s} }

func (s dueHeld) Claim(ctx context.Context, p store.ClaimParams) (store.Claimed, error) {
	c, err := s.Store.Claim(ctx, p)
	for i := range c.Leases {
		if i >= p.Limit-max(p.Held, 0) {
			c.Leases[i].Ahead = true
		}
	}
	return c, err
}

// confirmByIgnored confirms without moving the deadline.
type confirmByIgnored struct{ *memstore.Store }

func newConfirmByIgnored(s *memstore.Store) store.Store { return confirmByIgnored{s} }

func (s confirmByIgnored) Confirm(ctx context.Context, p store.ConfirmParams) error {
	p.By = 0
	return s.Store.Confirm(ctx, p)
}

// kindLost keeps no message's Kind.
type kindLost struct{ *memstore.Store }

func newKindLost(s *memstore.Store) store.Store { return kindLost{s} }

func (s kindLost) Enqueue(ctx context.Context, msgs []store.Message) error {
	msgs = slices.Clone(msgs)
	for i := range msgs {
		msgs[i].Kind = ""
	}
	return s.Store.Enqueue(ctx, msgs)
}
