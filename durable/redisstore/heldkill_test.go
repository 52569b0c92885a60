//go:build unix

package redisstore

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/internal/heldkill"
	"github.com/seed64e23a5c/timingwheel/internal/syncbuf"
)

func init() { moreRoles["heldrunner"] = runHeldRunner }

// runHeldRunner is the child of TestHeldMessagesOfAKilledRunComeBackWithinHeldLease:
// Run as heldkill.Handler wants, its lines on stdout.
func runHeldRunner() error {
	return withChildQueue(nil, func(q *durable.Queue) error {
		err := q.Run(context.Background(), heldkill.Workers, heldkill.Handler(func(line string) { fmt.Fprintln(os.Stdout, line) }))
		return fmt.Errorf("Run returned before the kill: %v", err)
	}, durable.WithVisibilityTimeout(heldkill.Visibility))
}

// TestHeldMessagesOfAKilledRunComeBackWithinHeldLease is the SIGKILL test
// of issue #37 (see package heldkill) on Redis.
func TestHeldMessagesOfAKilledRunComeBackWithinHeldLease(t *testing.T) {
	srv := startRedis(t)
	s := openStore(t, srv.client(t), childQueue)
	require.NoError(t, s.Enqueue(ctx, heldkill.Messages(redisNow(t, srv.client(t)))))

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=heldrunner", childAddrEnv+"="+srv.addr())
	var stderr syncbuf.Buffer
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
	next := func() string {
		select {
		case line := <-lines:
			return line
		case err := <-exited:
			exited <- err
			t.Fatalf("the child exited (%v): %s", err, stderr.String())
		case <-time.After(time.Minute):
			t.Fatalf("no line from the child after 1m: %s", stderr.String())
		}
		return ""
	}
	kill := func() {
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		select {
		case err := <-exited:
			exited <- err
		case <-time.After(30 * time.Second):
			t.Fatal("the child outlived a SIGKILL by 30s")
		}
	}
	heldkill.Check(t, s, next, kill)
}
