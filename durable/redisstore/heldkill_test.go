//go:build unix

package redisstore

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// Settings of TestHeldMessagesOfAKilledRunComeBackWithinHeldLease.
const (
	heldWorkers    = 4
	heldVisibility = 6 * time.Second // HeldLease (2s) is then the held leases' length
	heldQuick      = 300             // handled at once: Run's window grows
	heldSlow       = 40              // each keeps its worker busy until the kill
	// heldSlack is what a loaded machine may add to HeldLease before a
	// held message reaches the survivor's handler: the reap at the
	// deadline, the claim, a scheduler's delay.
	heldSlack = 3 * time.Second
	// heldLinger is how long the child waits to be killed: if its parent
	// died first, it exits by itself.
	heldLinger = 2 * time.Minute
)

func init() { moreRoles["heldrunner"] = runHeldRunner }

// runHeldRunner is the child of TestHeldMessagesOfAKilledRunComeBackWithinHeldLease:
// Run with heldWorkers workers; a message whose payload is "quick" is
// acked at once, and the handler of any other writes "START id attempt"
// to stdout and keeps its worker busy until the process is killed.
func runHeldRunner() error {
	return withChildQueue(nil, func(q *durable.Queue) error {
		err := q.Run(context.Background(), heldWorkers, func(_ context.Context, d *durable.Delivery) error {
			if string(d.Payload) == "quick" {
				return nil
			}
			fmt.Fprintf(os.Stdout, "START %s %d\n", d.ID, d.Attempt)
			time.Sleep(heldLinger)
			return nil
		})
		return fmt.Errorf("Run returned before the kill: %v", err)
	}, durable.WithVisibilityTimeout(heldVisibility))
}

// TestHeldMessagesOfAKilledRunComeBackWithinHeldLease is the SIGKILL test
// of issue #37 on Redis: a child process runs Run with its workers busy,
// quick messages first (so that Run claims ahead for its workers), then
// slow ones that keep every worker busy; Run holds more for them. The
// child is killed with SIGKILL. A surviving queue (this process) gets
// each held message within HeldLease (plus slack), at attempt 1 with no
// LastError; the messages in the handlers' hands come back when their
// lease (the visibility timeout) expires, at attempt 2 with LeaseExpired.
func TestHeldMessagesOfAKilledRunComeBackWithinHeldLease(t *testing.T) {
	srv := startRedis(t)
	s := openStore(t, srv.client(t), childQueue)
	now := redisNow(t, srv.client(t))
	var msgs []durable.Message
	for i := range heldQuick {
		msgs = append(msgs, durable.Message{ID: fmt.Sprintf("q%04d", i), Payload: []byte("quick"),
			Due: now.Add(-time.Hour + time.Duration(i)*time.Millisecond)})
	}
	for i := range heldSlow {
		msgs = append(msgs, durable.Message{ID: fmt.Sprintf("s%03d", i), Payload: []byte("slow"),
			Due: now.Add(-time.Minute + time.Duration(i)*time.Millisecond)})
	}
	require.NoError(t, s.Enqueue(ctx, msgs))

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=heldrunner", childAddrEnv+"="+srv.addr())
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := make(chan string, 100)
	exited := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	started := map[string]bool{}
	for len(started) < heldWorkers {
		select {
		case line := <-lines:
			f := strings.Fields(line)
			require.Len(t, f, 3, line)
			require.Equal(t, "START", f[0])
			require.Equal(t, "1", f[2], "%s: a first delivery", f[1])
			started[f[1]] = true
		case err := <-exited:
			t.Fatalf("the child exited (%v): %s", err, stderr.String())
		case <-time.After(time.Minute):
			t.Fatalf("the child's workers are not busy after 1m: %s", stderr.String())
		}
	}
	inFlight := settledInFlight(t, s)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	killedAt := time.Now()
	select {
	case err := <-exited:
		exited <- err
	case <-time.After(30 * time.Second):
		t.Fatal("the child outlived a SIGKILL by 30s")
	}
	require.Equal(t, inFlight, listInFlight(t, s), "nothing changed after the kill")

	var held, handled []string
	for _, id := range inFlight {
		if started[id] {
			handled = append(handled, id)
		} else {
			held = append(held, id)
		}
	}
	require.Len(t, handled, heldWorkers)
	require.NotEmpty(t, held, "Run held messages for its busy workers")
	t.Logf("killed Run (%d workers, visibility %v) with %d messages in its handlers %v and %d held for them %v",
		heldWorkers, heldVisibility, len(handled), handled, len(held), held)

	got := survive(t, s, inFlight, killedAt)
	for _, id := range held {
		g := got[id]
		t.Logf("held    %s: back after %v at attempt %d, LastError %q", id, g.after.Round(time.Millisecond), g.attempt, g.lastError)
		assert.Equal(t, 1, g.attempt, "%s: held, never handed out: attempt 1", id)
		assert.Empty(t, g.lastError, id)
		assert.LessOrEqual(t, g.after, durable.HeldLease+heldSlack, "%s: back within HeldLease", id)
	}
	for _, id := range handled {
		g := got[id]
		t.Logf("handled %s: back after %v at attempt %d, LastError %q", id, g.after.Round(time.Millisecond), g.attempt, g.lastError)
		assert.Equal(t, 2, g.attempt, "%s: in a handler: the attempt counts", id)
		assert.Equal(t, durable.LeaseExpired, g.lastError, id)
		assert.GreaterOrEqual(t, g.after, heldVisibility/2, "%s: back when its lease expires", id)
	}
}

// lockedBuffer is a bytes.Buffer safe for a child's writes and the test's
// reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// settledInFlight waits until the messages in flight stop changing (the
// workers are busy and Run claimed what it holds for them), and returns
// their IDs.
func settledInFlight(t *testing.T, s *Store) []string {
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
func listInFlight(t *testing.T, s *Store) []string {
	t.Helper()
	infos, next, err := s.List(ctx, store.ListParams{State: durable.InFlight, Limit: 1000})
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
	q, err := durable.New(s, durable.WithVisibilityTimeout(heldVisibility))
	require.NoError(t, err)
	defer func() { assert.NoError(t, q.Close()) }()
	type delivery struct {
		id string
		survived
	}
	deliveries := make(chan delivery, heldQuick+heldSlow)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- q.Run(runCtx, heldWorkers, func(_ context.Context, d *durable.Delivery) error {
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
	timeout := time.After(heldVisibility + 30*time.Second)
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
