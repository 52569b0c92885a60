//go:build unix

package pgstore

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/internal/heldkill"
)

func init() { moreRoles["heldrunner"] = runHeldRunner }

// runHeldRunner is the child of TestHeldMessagesOfAKilledRunComeBackWithinHeldLease:
// Run as heldkill.Handler wants, its lines on stdout.
func runHeldRunner() error {
	vis, err := envInt(childVisEnv)
	if err != nil {
		return err
	}
	pool, s, err := childStore(context.Background(), 2*heldkill.Workers)
	if err != nil {
		return err
	}
	defer pool.Close()
	defer s.Close()
	q, err := durable.New(s, durable.WithVisibilityTimeout(time.Duration(vis)))
	if err != nil {
		return err
	}
	defer q.Close()
	err = q.Run(context.Background(), heldkill.Workers, heldkill.Handler(func(line string) { say("%s", line) }))
	return fmt.Errorf("Run returned before the kill: %v", err)
}

// TestHeldMessagesOfAKilledRunComeBackWithinHeldLease is the SIGKILL test
// of issue #37 (see package heldkill) on PostgreSQL.
func TestHeldMessagesOfAKilledRunComeBackWithinHeldLease(t *testing.T) {
	pool := testPool(t)
	schema := newSchema(t)
	queue := freshQueue()
	s := openStore(t, pool, queue, WithSchema(schema))
	require.NoError(t, s.Enqueue(ctx, heldkill.Messages(dbNow(t))))

	env := childEnvOf("heldrunner", "heldrunner-"+schema, schema, queue)
	env[childVisEnv] = strconv.FormatInt(int64(heldkill.Visibility), 10)
	c := startChild(t, env)
	heldkill.Check(t, s, func() string { return c.next(t, time.Minute) }, func() { c.kill(t) })
}
