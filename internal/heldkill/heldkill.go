// Package heldkill is the SIGKILL test of issue #37 that the stores shared
// by processes run: a child process runs Run, which works through quick
// messages first (so that its window grows), then gives all its workers
// but one a slow message that keeps it busy, and waits for the later
// messages, slow ones too: the last worker takes one, and Run, having
// claimed the others ahead of their due time for busy workers, holds
// them. The child is killed with SIGKILL. A surviving queue gets each
// held message within HeldLease (plus slack), at attempt 1 with no
// LastError; the messages in the handlers' hands come back when their
// lease (the visibility timeout) expires, at attempt 2 with LeaseExpired.
//
// A store's test starts the child (whose Run uses Handler), then calls
// Check; how a child is started and reports its lines is the store's.
package heldkill

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// The test's settings.
const (
	Workers    = 4
	Visibility = 6 * time.Second // HeldLease (2s) is then the held leases' length
	quick      = 300             // handled at once: Run's window grows
	slow       = Workers - 1     // each keeps its worker busy until the kill
	later      = 4               // due laterAt after the enqueue, slow too
	laterAt    = 6 * time.Second
	// slack is what a loaded machine may add to HeldLease before a held
	// message reaches the survivor's handler: the reap at the deadline,
	// the claim, a scheduler's delay.
	slack = 3 * time.Second
	// linger is how long a handler of the child waits to be killed: if
	// its parent died first, it returns by itself.
	linger = 2 * time.Minute
)

// Messages returns the messages to enqueue before the child starts, now
// being the store's time: the quick ones, then the slow ones, due before
// now, and the later ones (IDs "h...") due laterAt after it.
func Messages(now time.Time) []durable.Message {
	var msgs []durable.Message
	for i := range quick {
		msgs = append(msgs, durable.Message{ID: fmt.Sprintf("q%04d", i), Payload: []byte("quick"),
			Due: now.Add(-time.Hour + time.Duration(i)*time.Millisecond)})
	}
	for i := range slow {
		msgs = append(msgs, durable.Message{ID: fmt.Sprintf("s%03d", i), Payload: []byte("slow"),
			Due: now.Add(-time.Minute + time.Duration(i)*time.Millisecond)})
	}
	for i := range later {
		msgs = append(msgs, durable.Message{ID: fmt.Sprintf("h%03d", i), Payload: []byte("slow"),
			Due: now.Add(laterAt + time.Duration(i)*time.Millisecond)})
	}
	return msgs
}

// Handler is the child's handler, for Run with Workers workers and a
// visibility timeout of Visibility: it acks a quick message at once, and
// for any other calls say with the line "START id attempt" and keeps its
// worker busy until the process is killed.
func Handler(say func(line string)) durable.Handler {
	return func(_ context.Context, d *durable.Delivery) error {
		if string(d.Payload) == "quick" {
			// Quick, but not so quick that none finishes while Run
			// claims: its window grows with those that do, and the
			// last claims of them leave it open.
			time.Sleep(5 * time.Millisecond)
			return nil
		}
		say(fmt.Sprintf("START %s %d", d.ID, d.Attempt))
		time.Sleep(linger)
		return nil
	}
}

// Check runs the test on s, a store of the child's queue, once the child
// runs: next returns the child's next line (failing the test if none comes
// in time), and kill kills it with SIGKILL and returns once it exited.
func Check(t *testing.T, s store.Store, next func() string, kill func()) {
	t.Helper()
	started := map[string]bool{}
	for len(started) < Workers {
		f := strings.Fields(next())
		require.Len(t, f, 3)
		require.Equal(t, "START", f[0])
		require.Equal(t, "1", f[2], "%s: a first delivery", f[1])
		started[f[1]] = true
	}
	inFlight := settledInFlight(t, s)
	kill()
	killedAt := time.Now()
	require.Equal(t, inFlight, listInFlight(t, s), "nothing changed after the kill")

	var held, handled []string
	for _, id := range inFlight {
		if started[id] {
			handled = append(handled, id)
		} else {
			held = append(held, id)
		}
	}
	require.Len(t, handled, Workers)
	require.NotEmpty(t, held, "Run held later messages its last worker did not take, claimed ahead for busy workers")
	t.Logf("killed Run (%d workers, visibility %v) with %d messages in its handlers %v and %d held for them %v",
		Workers, Visibility, len(handled), handled, len(held), held)

	got := survive(t, s, inFlight, killedAt)
	for _, id := range held {
		g := got[id]
		t.Logf("held    %s: back after %v at attempt %d, LastError %q", id, g.after.Round(time.Millisecond), g.attempt, g.lastError)
		assert.Equal(t, 1, g.attempt, "%s: held, never handed out: attempt 1", id)
		assert.Empty(t, g.lastError, id)
		assert.LessOrEqual(t, g.after, durable.HeldLease+slack, "%s: back within HeldLease", id)
	}
	for _, id := range handled {
		g := got[id]
		t.Logf("handled %s: back after %v at attempt %d, LastError %q", id, g.after.Round(time.Millisecond), g.attempt, g.lastError)
		assert.Equal(t, 2, g.attempt, "%s: in a handler: the attempt counts", id)
		assert.Equal(t, durable.LeaseExpired, g.lastError, id)
		assert.GreaterOrEqual(t, g.after, Visibility/2, "%s: back when its lease expires", id)
	}
}

// settledInFlight waits until the messages in flight stop changing (the
// workers are busy, the last with a later message, and Run claimed what
// it holds for them), and returns their IDs.
func settledInFlight(t *testing.T, s store.Store) []string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	prev := listInFlight(t, s)
	for {
		time.Sleep(500 * time.Millisecond)
		cur := listInFlight(t, s)
		if slices.Equal(prev, cur) {
			return cur
		}
		require.True(t, time.Now().Before(deadline), "the messages in flight do not settle: %v", cur)
		prev = cur
	}
}

// listInFlight returns the IDs of the messages in flight, sorted.
func listInFlight(t *testing.T, s store.Store) []string {
	t.Helper()
	infos, next, err := s.List(context.Background(), store.ListParams{State: store.InFlight, Limit: 1000})
	require.NoError(t, err)
	require.Empty(t, next)
	ids := make([]string, len(infos))
	for i, info := range infos {
		ids[i] = info.ID
	}
	slices.Sort(ids)
	return ids
}

// survived is how a message reached the surviving queue's handler.
type survived struct {
	attempt   int
	lastError string
	after     time.Duration // since the kill
}

// survive runs a queue on s (the survivor) until every message of ids
// reached its handler, which acks, and returns their first deliveries.
func survive(t *testing.T, s store.Store, ids []string, killedAt time.Time) map[string]survived {
	t.Helper()
	q, err := durable.New(s, durable.WithVisibilityTimeout(Visibility))
	require.NoError(t, err)
	defer func() { assert.NoError(t, q.Close()) }()
	type delivery struct {
		id string
		survived
	}
	deliveries := make(chan delivery, quick+slow+later)
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- q.Run(runCtx, Workers, func(_ context.Context, d *durable.Delivery) error {
			deliveries <- delivery{d.ID, survived{d.Attempt, d.LastError, time.Since(killedAt)}}
			return nil
		})
	}()
	defer func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Error("the survivor's Run did not return")
		}
	}()
	got := map[string]survived{}
	timeout := time.After(Visibility + 30*time.Second)
	for !allIn(got, ids) {
		select {
		case d := <-deliveries:
			if _, ok := got[d.id]; !ok {
				got[d.id] = d.survived
			}
		case <-timeout:
			t.Fatalf("after %v, the survivor got %d of the %d messages in flight at the kill", time.Since(killedAt), len(got), len(ids))
		}
	}
	return got
}

func allIn(got map[string]survived, ids []string) bool {
	for _, id := range ids {
		if _, ok := got[id]; !ok {
			return false
		}
	}
	return true
}
