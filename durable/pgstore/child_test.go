package pgstore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/internal/deliverylog"
)

// The multi-process tests (issue #23) re-execute the test binary as their
// child processes, with the role and its parameters in the environment.
// TestMain calls runChild before it starts a server: a child connects to
// the server of its parent, whose connection string it is given.
const (
	childEnv       = "PGSTORE_TEST_CHILD"  // the role: ordertx, producer, consumer, runner
	childConnEnv   = "PGSTORE_TEST_CONN"   // connection string, application_name included
	childSchemaEnv = "PGSTORE_TEST_SCHEMA" // schema of the store
	childQueueEnv  = "PGSTORE_TEST_QUEUE"  // queue name
	childCountEnv  = "PGSTORE_TEST_N"      // number of messages (producer)
	childStartEnv  = "PGSTORE_TEST_START"  // due time of message 0, Unix ns (producer)
	childLogEnv    = "PGSTORE_TEST_LOG"    // delivery log (consumer, runner)
	childVisEnv    = "PGSTORE_TEST_VIS"    // visibility timeout (consumer, runner)
	childOrderEnv  = "PGSTORE_TEST_ORDER"  // order ID (ordertx)
	childPointEnv  = "PGSTORE_TEST_POINT"  // where to stop (ordertx)
	childDueEnv    = "PGSTORE_TEST_DUE"    // due time of the order's timeout, Unix ns (ordertx)
	childDelayEnv  = "PGSTORE_TEST_DELAY"  // how long each handler takes (runner), in ns
)

// Settings of the consumer processes: receivers (Receive) or workers (Run)
// each, and a short back-off after an expired lease.
const (
	childReceivers = 8
	childBackoff   = 100 * time.Millisecond
	// childLinger is how long a child that waits to be killed lives: if
	// its parent died first, it exits by itself.
	childLinger = 2 * time.Minute
)

// moreRoles are the child roles that files of their own add (those built
// on some systems only), by name.
var moreRoles = map[string]func() error{}

// runChild runs the child process of a multi-process test, if this test
// binary was started as one; then it exits.
func runChild() bool {
	role := os.Getenv(childEnv)
	if role == "" {
		return false
	}
	var err error
	switch role {
	case "ordertx":
		err = runOrderTx()
	case "producer":
		err = runProducer()
	case "consumer":
		err = runConsumer(false)
	case "runner":
		err = runConsumer(true)
	default:
		if f := moreRoles[role]; f != nil {
			err = f()
			break
		}
		err = fmt.Errorf("unknown child role %q", role)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", role, err)
		os.Exit(1)
	}
	os.Exit(0)
	return true
}

// childStore opens a pool on the parent's server and the store of the
// child's queue and schema; close the pool, then the store.
func childStore(c context.Context, conns int) (*pgxpool.Pool, *Store, error) {
	cfg, err := pgxpool.ParseConfig(os.Getenv(childConnEnv) + " pool_max_conns=" + strconv.Itoa(conns))
	if err != nil {
		return nil, nil, err
	}
	pool, err := pgxpool.NewWithConfig(c, cfg)
	if err != nil {
		return nil, nil, err
	}
	s, err := New(c, pool, os.Getenv(childQueueEnv), WithSchema(os.Getenv(childSchemaEnv)))
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return pool, s, nil
}

func envInt(name string) (int64, error) {
	v, err := strconv.ParseInt(os.Getenv(name), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return v, nil
}

// say writes a line to stdout, where the parent reads it.
func say(format string, args ...any) {
	fmt.Fprintf(os.Stdout, format+"\n", args...)
}

// runOrderTx is the child of TestEnqueueTxKilled: in one transaction, it
// inserts the row of an order and enqueues, with EnqueueTx, its timeout
// (a message of the order's ID), and commits. It writes "AT point" to
// stdout when it reaches the point of PGSTORE_TEST_POINT and waits there
// to be killed:
//
//	inserted   the row inserted, before EnqueueTx
//	enqueued   after EnqueueTx, before COMMIT
//	committed  after COMMIT returned
//	random     says "GO" once connected, then goes on to "AT committed"
//	           at once: the parent kills it at a random moment
//
// "AT committed" also gives the time from the BEGIN to the commit's
// return, in ns.
func runOrderTx() error {
	c := context.Background()
	pool, s, err := childStore(c, 2)
	if err != nil {
		return err
	}
	defer s.Close()
	defer pool.Close()
	order, point := os.Getenv(childOrderEnv), os.Getenv(childPointEnv)
	dueNs, err := envInt(childDueEnv)
	if err != nil {
		return err
	}
	if err := pool.Ping(c); err != nil {
		return err
	}
	wait := func(at string) error {
		say("AT %s", at)
		time.Sleep(childLinger)
		return fmt.Errorf("not killed at %s", at)
	}
	if point == "random" {
		say("GO")
	}
	began := time.Now()
	tx, err := pool.Begin(c)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(c) }()
	if _, err := tx.Exec(c, `INSERT INTO `+s.Schema()+`.orders (id, amount) VALUES ($1, $2)`, order, len(order)); err != nil {
		return err
	}
	if point == "inserted" {
		return wait(point)
	}
	m := durable.Message{ID: order, Payload: []byte("timeout-of-" + order), Due: time.Unix(0, dueNs)}
	if err := s.EnqueueTx(c, tx, m); err != nil {
		return err
	}
	if point == "enqueued" {
		return wait(point)
	}
	if err := tx.Commit(c); err != nil {
		return err
	}
	return wait("committed " + strconv.FormatInt(int64(time.Since(began)), 10))
}

// childDue is the due time of message i of the producer: spread over two
// seconds from start, out of ID order.
func childDue(start time.Time, i int) time.Time {
	return start.Add(time.Duration(i*7919%2000) * time.Millisecond)
}

func childID(i int) string { return fmt.Sprintf("m%06d", i) }

// runProducer enqueues messages 0 to n-1, due at childDue, from 8
// goroutines, each message's payload its due time in Unix ns, and fails
// if an Enqueue fails.
func runProducer() error {
	c := context.Background()
	n, err := envInt(childCountEnv)
	if err != nil {
		return err
	}
	startNs, err := envInt(childStartEnv)
	if err != nil {
		return err
	}
	start := time.Unix(0, startNs)
	pool, s, err := childStore(c, 8)
	if err != nil {
		return err
	}
	defer s.Close()
	defer pool.Close()
	var next atomic.Int64
	errs := make([]error, 8)
	var wg sync.WaitGroup
	for g := range errs {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= int(n) {
					return
				}
				due := childDue(start, i)
				m := durable.Message{ID: childID(i), Payload: []byte(strconv.FormatInt(due.UnixNano(), 10)), Due: due}
				if err := s.Enqueue(c, []durable.Message{m}); err != nil {
					errs[g] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// runConsumer receives until SIGTERM, with Receive and Ack from
// childReceivers goroutines, or with Run (run) and as many workers,
// writing to its log one line per write, so that a SIGKILL loses nothing
// written:
//
//	D id attempt due received deadline payload   (a delivery; times in Unix ns)
//	A id                                         (its Ack returned nil)
//	L id                                         (its Ack returned ErrLeaseLost)
//	E id error                                   (its Ack failed otherwise)
//
// With Run, the handler writes D and returns nil after PGSTORE_TEST_DELAY
// (if set), and the queue's observer
// writes A and L as Run's acks are written.
func runConsumer(run bool) error {
	vis, err := envInt(childVisEnv)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(os.Getenv(childLogEnv), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	lw := deliverylog.New(f)
	c, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	pool, s, err := childStore(context.Background(), 2*childReceivers)
	if err != nil {
		return err
	}
	defer pool.Close()
	defer s.Close()
	opts := []durable.Option{
		durable.WithVisibilityTimeout(time.Duration(vis)),
		durable.WithMaxAttempts(1000),
		durable.WithBackoff(func(int) time.Duration { return childBackoff }),
	}
	if run {
		opts = append(opts, durable.WithObserver(lw.Observer()))
	}
	q, err := durable.New(s, opts...)
	if err != nil {
		return err
	}
	defer q.Close()
	if run {
		delay, _ := envInt(childDelayEnv) // none if unset
		err := q.Run(c, childReceivers, func(_ context.Context, d *durable.Delivery) error {
			lw.Delivered(d)
			time.Sleep(time.Duration(delay))
			return nil
		})
		return errors.Join(err, lw.Err())
	}
	return lw.ReceiveAndAck(c, q, childReceivers)
}

// The parent's side.

// A child is a child process of a multi-process test.
type child struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	errs  bytes.Buffer  // its stderr
	lines chan string   // its stdout, line by line, closed at EOF
	done  chan struct{} // closed once it exited
	err   error         // of Wait, once done
}

// childEnvOf returns the environment of a child of role on the shared
// server, named app (its application_name) for the database.
func childEnvOf(role, app, schema, queue string) map[string]string {
	return map[string]string{
		childEnv:       role,
		childConnEnv:   server.ConnString() + " application_name=" + app,
		childSchemaEnv: schema,
		childQueueEnv:  queue,
	}
}

// startChild starts the test binary as a child with env added to its
// environment; the test's cleanup kills it, if it still runs, and waits
// for it.
func startChild(t *testing.T, env map[string]string) *child {
	t.Helper()
	c := &child{lines: make(chan string, 100), done: make(chan struct{})}
	c.cmd = exec.Command(os.Args[0], "-test.run=^$")
	c.cmd.Env = os.Environ()
	for k, v := range env {
		c.cmd.Env = append(c.cmd.Env, k+"="+v)
	}
	c.cmd.Stderr = lockedWriter{&c.mu, &c.errs}
	out, err := c.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, c.cmd.Start())
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
		c.err = c.cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		<-c.done
	})
	return c
}

// lockedWriter writes to w under mu.
type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// stderr returns what the child wrote to stderr so far.
func (c *child) stderr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.errs.String()
}

// next returns the child's next line of stdout, failing the test if it
// exits first or writes none within timeout.
func (c *child) next(t *testing.T, timeout time.Duration) string {
	t.Helper()
	select {
	case line, ok := <-c.lines:
		if !ok {
			<-c.done
			t.Fatalf("child exited (%v) instead of writing a line: %s", c.err, c.stderr())
		}
		return line
	case <-time.After(timeout):
		t.Fatalf("no line from the child after %v: %s", timeout, c.stderr())
	}
	return ""
}

// kill sends SIGKILL to the child and waits until it is gone.
func (c *child) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGKILL))
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the child outlived a SIGKILL by 30s")
	}
}

// wait waits for the child to exit, and fails the test if it failed.
func (c *child) wait(t *testing.T, timeout time.Duration, name string) {
	t.Helper()
	select {
	case <-c.done:
		require.NoError(t, c.err, "%s: %s", name, c.stderr())
	case <-time.After(timeout):
		t.Fatalf("%s still running after %v: %s", name, timeout, c.stderr())
	}
}

// rest returns the lines of stdout the child wrote that were not read,
// once it exited.
func (c *child) rest() []string {
	<-c.done
	var out []string
	for line := range c.lines {
		out = append(out, line)
	}
	return out
}

// waitBackendsGone waits until the database has no session of
// application_name app: then the transactions of a killed child are over,
// committed or rolled back for good.
func waitBackendsGone(t *testing.T, app string) {
	t.Helper()
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, sharedPool.QueryRow(ctx,
			`SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n))
		return n == 0
	}, 30*time.Second, 2*time.Millisecond, "the sessions of %s end", app)
}

// newSchema creates a schema of the test's own, dropped by its cleanup.
func newSchema(t *testing.T) string {
	t.Helper()
	schema := "mp_" + freshQueue()
	_, err := sharedPool.Exec(ctx, `CREATE SCHEMA `+schema)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = sharedPool.Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`) })
	return schema
}
