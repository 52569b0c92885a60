package durable

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tests in this file run the test binary again as a child process
// (selected by childEnv), which works on a queue file and reports on its
// stdout, one line per fact, what returned nil: "E id" after an Enqueue,
// "R id" after a Receive, "A id" after an Ack. The parent then kills or stops it and checks the
// file against those lines.

func runChild(role string) int {
	path := os.Getenv("DURABLE_TEST_PATH")
	var err error
	switch role {
	case "crash":
		err = crashChild(path, os.Getenv("DURABLE_TEST_ROUND"))
	case "fulldisk":
		err = fullDiskChild(path)
	default:
		err = fmt.Errorf("unknown child role %q", role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

// report writes one line to stdout with one write, so that a kill never
// leaves half a line, and a line is only written after its fact holds.
var reportMu sync.Mutex

func report(kind, id string) {
	reportMu.Lock()
	defer reportMu.Unlock()
	_, _ = os.Stdout.WriteString(kind + " " + id + "\n")
}

// crashChild enqueues, receives and acks at full speed until killed.
func crashChild(path, round string) error {
	q, err := Open(path, WithVisibilityTimeout(time.Minute))
	if err != nil {
		return err
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Go(func() {
			for n := 0; ; n++ {
				id := fmt.Sprintf("r%s-p%d-%d", round, p, n)
				// Most are due at once; some a little later.
				due := time.Now().Add(time.Duration(rand.IntN(3)) * time.Millisecond)
				if err := q.Enqueue(ctx, Message{ID: id, Payload: []byte(id), Due: due}); err != nil {
					fmt.Fprintln(os.Stderr, "enqueue:", err)
					return
				}
				report("E", id)
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for {
				d, err := q.Receive(ctx)
				if err != nil {
					fmt.Fprintln(os.Stderr, "receive:", err)
					return
				}
				if string(d.Payload) != d.ID {
					fmt.Fprintln(os.Stderr, "payload mismatch for", d.ID)
					os.Exit(3)
				}
				report("R", d.ID) // from here on, an Ack may be on disk before its "A"
				if err := d.Ack(ctx); err != nil {
					fmt.Fprintln(os.Stderr, "ack:", err)
					return
				}
				report("A", d.ID)
			}
		})
	}
	wg.Wait()
	return errors.New("workers stopped")
}

// startChild runs the test binary as a child in role, with env added, and
// returns it with a reader of its stdout.
func startChild(t *testing.T, role string, env ...string) (*exec.Cmd, *bufio.Scanner, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{childEnv + "=" + role}, env...)...)
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(out)
	return cmd, sc, stderr
}

// facts reads the lines of a child into sets by kind until EOF.
func facts(sc *bufio.Scanner, sets map[string]map[string]bool) {
	for sc.Scan() {
		kind, id, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		if set := sets[kind]; set != nil {
			set[id] = true
		}
	}
}

// drain receives and acks everything deliverable now on a mock clock
// moved far ahead, and returns the IDs.
// check, if not nil, is called on each delivery.
func drain(t *testing.T, path string, check func(*Delivery)) map[string]int {
	t.Helper()
	mock := clock.NewMock()
	mock.Set(time.Now().Add(24 * time.Hour)) // every due time and lease has passed
	q, err := Open(path, WithClock(mock), WithMaxAttempts(1000),
		WithBackoff(func(int) time.Duration { return 0 }))
	require.NoError(t, err)
	defer func() { require.NoError(t, q.Close()) }()
	got := map[string]int{}
	ctx := context.Background()
	for {
		rctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		d, err := q.Receive(rctx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			break
		}
		require.NoError(t, err)
		got[d.ID]++
		if check != nil {
			check(d)
		}
		require.NoError(t, d.Ack(ctx))
	}
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, Stats{}, st, "everything was drained")
	return got
}

// TestCrashKeepsEnqueuedAndAcked kills a child that enqueues, receives
// and acks at full speed with SIGKILL at random moments, several times
// over one file, then checks that every message enqueued and not acked is
// delivered, and that no acked message comes back.
func TestCrashKeepsEnqueuedAndAcked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crash.db")
	enqueued, received, acked := map[string]bool{}, map[string]bool{}, map[string]bool{}
	const rounds = 5
	for round := range rounds {
		cmd, sc, stderr := startChild(t, "crash", "DURABLE_TEST_PATH="+path, fmt.Sprintf("DURABLE_TEST_ROUND=%d", round))
		done := make(chan struct{})
		e, r, a := map[string]bool{}, map[string]bool{}, map[string]bool{}
		go func() { facts(sc, map[string]map[string]bool{"E": e, "R": r, "A": a}); close(done) }()
		// Let it work a random while once it has started writing.
		time.Sleep(time.Duration(150+rand.IntN(350)) * time.Millisecond)
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		<-done
		err := cmd.Wait()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "child stderr: %s", stderr)
		require.Equal(t, syscall.SIGKILL, exit.Sys().(syscall.WaitStatus).Signal(), "child stderr: %s", stderr)
		require.NotEmpty(t, e, "round %d: the child enqueued nothing; stderr: %s", round, stderr)
		for id := range e {
			enqueued[id] = true
		}
		for id := range a {
			acked[id] = true
		}
		for id := range r {
			received[id] = true
		}
	}
	delivered := drain(t, path, func(d *Delivery) {
		require.Equal(t, d.ID, string(d.Payload), "payload of %s", d.ID)
	})

	// A message received but not reported acked may have been acked just
	// before the kill: its fate is unknown. Every other message enqueued
	// and not acked must be delivered now.
	lost, resurrected := 0, 0
	for id := range enqueued {
		if !received[id] && delivered[id] == 0 {
			lost++
		}
	}
	for id := range acked {
		if delivered[id] > 0 {
			resurrected++
		}
	}
	t.Logf("%d rounds: %d enqueued, %d received, %d acked, %d delivered after the crashes",
		rounds, len(enqueued), len(received), len(acked), len(delivered))
	assert.Zero(t, lost, "messages enqueued and never received that did not come back")
	assert.Zero(t, resurrected, "acked messages that came back")
	assert.NotEmpty(t, acked, "the children acked nothing: the test checked nothing about acks")
	assert.NotEmpty(t, delivered, "nothing was left to deliver: the test checked nothing about enqueues")
}
