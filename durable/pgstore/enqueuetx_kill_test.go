package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// A received is a delivery of a queue of the parent.
type received struct {
	attempt int
	due     time.Time
	recv    time.Time
	payload string
}

// A recorder receives from a queue with n goroutines, recording each
// delivery before it acks it, until stop.
type recorder struct {
	mu   sync.Mutex
	got  map[string][]received
	errs []error
	stop func()
}

func record(q *durable.Queue, n int) *recorder {
	r := &recorder{got: map[string][]received{}}
	c, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				d, err := q.Receive(c)
				if err != nil {
					if c.Err() == nil {
						r.fail(err)
					}
					return
				}
				r.mu.Lock()
				r.got[d.ID] = append(r.got[d.ID], received{d.Attempt, d.Due, time.Now(), string(d.Payload)})
				r.mu.Unlock()
				if err := d.Ack(ctx); err != nil {
					r.fail(fmt.Errorf("ack %s: %w", d.ID, err))
				}
			}
		})
	}
	r.stop = func() { cancel(); wg.Wait() }
	return r
}

func (r *recorder) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, err)
}

// deliveries returns the deliveries of id so far.
func (r *recorder) deliveries(id string) []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got[id])
}

// TestEnqueueTxKilled kills with SIGKILL, one after the other, child
// processes (runOrderTx) that insert an order's row and EnqueueTx its
// timeout in one transaction: a quarter of them after the row is inserted,
// a quarter after EnqueueTx and before COMMIT, a quarter once COMMIT
// returned, and a quarter at a random moment of the transaction. Once the
// database ended each child's session, the order's row exists if and
// only if its timeout does (pending, or delivered already), and both
// exist if COMMIT returned, neither if it was not sent. Meanwhile a
// queue of the parent receives: it gets the timeout of every committed
// order once, with its payload, at or after its due time (1 to 2 seconds
// after the child started), and nothing else.
func TestEnqueueTxKilled(t *testing.T) {
	pool := testPool(t)
	schema := newSchema(t)
	_, err := pool.Exec(ctx, `CREATE TABLE `+schema+`.orders (
		id text PRIMARY KEY, amount int NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`)
	require.NoError(t, err)
	queue := freshQueue()
	s := openStore(t, pool, queue, WithSchema(schema))
	q := newQueue(t, s, durable.WithVisibilityTimeout(time.Minute))
	rec := record(q, 4)
	defer rec.stop()

	const rounds = 40
	points := []string{"enqueued", "committed", "random", "inserted"}
	var (
		committed = map[string]bool{} // COMMIT returned
		dues      = map[string]time.Time{}
		flow      = 5 * time.Millisecond // from BEGIN to the commit's return, as last seen
		random    = map[bool]int{}       // random kills by whether the order was committed
	)
	began := time.Now()
	for i := range rounds {
		point := points[i%len(points)]
		order := fmt.Sprintf("order-%03d", i)
		app := "ordertx-" + schema + "-" + strconv.Itoa(i)
		due := time.Now().Add(time.Second + rand.N(time.Second))
		dues[order] = due
		env := childEnvOf("ordertx", app, schema, queue)
		env[childOrderEnv], env[childPointEnv] = order, point
		env[childDueEnv] = strconv.FormatInt(due.UnixNano(), 10)
		c := startChild(t, env)
		var lines []string
		if point == "random" {
			require.Equal(t, "GO", c.next(t, time.Minute))
			time.Sleep(rand.N(flow * 3 / 2))
		} else {
			line := c.next(t, time.Minute)
			require.True(t, strings.HasPrefix(line, "AT "+point), "%s: %q", order, line)
			lines = append(lines, line)
		}
		c.kill(t)
		lines = append(lines, c.rest()...)
		if point == "committed" || point == "random" {
			for _, line := range lines {
				if f := strings.Fields(line); len(f) == 3 && f[1] == "committed" {
					committed[order] = true
					ns, err := strconv.ParseInt(f[2], 10, 64)
					require.NoError(t, err, line)
					flow = time.Duration(ns)
				}
			}
		}
		if point == "random" {
			random[committed[order]]++
		}
		if point == "committed" {
			require.True(t, committed[order], "%s: %q", order, lines)
		}
		waitBackendsGone(t, app)

		var rowExists bool
		require.NoError(t, pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+schema+`.orders WHERE id = $1)`, order).
			Scan(&rowExists))
		info, err := s.Get(ctx, order)
		msgExists := err == nil
		if errors.Is(err, durable.ErrNotFound) {
			// Delivered and acked already? The recorder records a
			// delivery before its Ack.
			msgExists = len(rec.deliveries(order)) > 0
		} else {
			require.NoError(t, err, order)
			assert.Equal(t, "timeout-of-"+order, string(info.Payload), order)
		}
		require.Equal(t, rowExists, msgExists, "%s killed at %s: the order's row exists: %v, its timeout: %v",
			order, point, rowExists, msgExists)
		switch {
		case point == "inserted" || point == "enqueued":
			require.False(t, rowExists, "%s: killed before COMMIT, and committed", order)
		case committed[order]:
			require.True(t, rowExists, "%s: COMMIT returned, and nothing there", order)
		default:
			committed[order] = rowExists // killed around the commit: either
		}
	}
	t.Logf("%d rounds in %v; random kills: %d committed, %d not; last BEGIN to COMMIT: %v",
		rounds, time.Since(began), random[true], random[false], flow)

	// Every committed timeout is delivered, once, at or after its due
	// time; no other.
	var want []string
	for order, ok := range committed {
		if ok {
			want = append(want, order)
		}
	}
	slices.Sort(want)
	require.Eventually(t, func() bool {
		for _, order := range want {
			if len(rec.deliveries(order)) == 0 {
				return false
			}
		}
		st, err := s.Stats(ctx)
		require.NoError(t, err)
		return st == durable.Stats{}
	}, time.Minute, 10*time.Millisecond, "every committed timeout delivered and acked")
	rec.stop()
	require.Empty(t, rec.errs)
	var rows []string
	r, err := pool.Query(ctx, `SELECT id FROM `+schema+`.orders ORDER BY id`)
	require.NoError(t, err)
	for r.Next() {
		var id string
		require.NoError(t, r.Scan(&id))
		rows = append(rows, id)
	}
	require.NoError(t, r.Err())
	assert.Equal(t, want, rows, "the orders committed")
	var delivered []string
	for order, ds := range rec.got {
		delivered = append(delivered, order)
		require.Len(t, ds, 1, "%s delivered %d times", order, len(ds))
		d := ds[0]
		assert.Equal(t, 1, d.attempt, order)
		assert.Equal(t, "timeout-of-"+order, d.payload, order)
		assert.True(t, d.due.Equal(dues[order].Truncate(time.Microsecond)) || d.due.Equal(dues[order].Truncate(time.Microsecond).Add(time.Microsecond)),
			"%s: due %v, want %v", order, d.due, dues[order])
		assert.False(t, d.recv.Before(dues[order]), "%s delivered %v before its due time", order, dues[order].Sub(d.recv))
	}
	slices.Sort(delivered)
	assert.Equal(t, want, delivered, "the timeouts delivered")
	assert.GreaterOrEqual(t, len(want), rounds/4, "the orders killed after COMMIT at least")
}
