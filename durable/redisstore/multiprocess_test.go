package redisstore

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A child is a process of the multi-process test.
type child struct {
	cmd  *exec.Cmd
	out  bytes.Buffer
	log  string
	done chan error
}

func startChild(t *testing.T, role, addr string, n int, start time.Time, log string) *child {
	t.Helper()
	c := &child{log: log, done: make(chan error, 1)}
	c.cmd = exec.Command(os.Args[0], "-test.run=^$")
	c.cmd.Env = append(os.Environ(),
		childEnv+"="+role,
		childAddrEnv+"="+addr,
		childCountEnv+"="+strconv.Itoa(n),
		childStartEnv+"="+strconv.FormatInt(start.UnixNano(), 10),
		childLogEnv+"="+log,
	)
	c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.out
	require.NoError(t, c.cmd.Start())
	go func() { c.done <- c.cmd.Wait() }()
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		<-c.done
	})
	return c
}

// wait waits for the child to exit, and fails the test if it failed.
func (c *child) wait(t *testing.T, timeout time.Duration, name string) {
	t.Helper()
	select {
	case err := <-c.done:
		c.done <- err
		require.NoError(t, err, "%s: %s", name, c.out.String())
	case <-time.After(timeout):
		t.Fatalf("%s still running after %v: %s", name, timeout, c.out.String())
	}
}

// ackCounter counts the A lines of logs as they grow.
type ackCounter struct {
	offsets map[string]int64
	acks    int
}

func (a *ackCounter) update(logs []string) {
	for _, path := range logs {
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		_, _ = f.Seek(a.offsets[path], io.SeekStart)
		raw, _ := io.ReadAll(f)
		_ = f.Close()
		b := string(raw)
		// Count only complete lines.
		last := strings.LastIndexByte(b, '\n')
		if last < 0 {
			continue
		}
		b = b[:last+1]
		a.offsets[path] += int64(len(b))
		a.acks += strings.Count("\n"+b, "\nA ")
	}
}

// TestMultiProcess runs a producer and three consumer processes on one
// Redis, with 100,000 messages (10,000 with -short), and kills one
// consumer with SIGKILL once half the messages are acked. Then it checks
// the consumers' logs: every message acked, none delivered before its
// due time, and none delivered twice unless its lease had expired.
func TestMultiProcess(t *testing.T) {
	n := 100_000
	if testing.Short() {
		n = 10_000
	}
	srv := startRedis(t)
	c := srv.client(t)
	s := openStore(t, c, childQueue)
	start := redisNow(t, c).Add(500 * time.Millisecond)
	dir := t.TempDir()

	var consumers []*child
	var logs []string
	for i := range 3 {
		log := filepath.Join(dir, fmt.Sprintf("consumer%d.log", i))
		logs = append(logs, log)
		consumers = append(consumers, startChild(t, "consumer", srv.addr(), n, start, log))
	}
	began := time.Now()
	producer := startChild(t, "producer", srv.addr(), n, start, "")

	// Kill consumer 0 once half the messages are acked.
	acks := &ackCounter{offsets: map[string]int64{}}
	deadline := time.Now().Add(3 * time.Minute)
	for acks.acks < n/2 {
		require.True(t, time.Now().Before(deadline), "only %d acks", acks.acks)
		time.Sleep(20 * time.Millisecond)
		acks.update(logs)
	}
	require.NoError(t, consumers[0].cmd.Process.Signal(syscall.SIGKILL))
	killedAt := time.Now()
	t.Logf("consumer 0 killed after %v, %d acks", killedAt.Sub(began), acks.acks)
	producer.wait(t, time.Until(deadline), "producer")

	// The others finish the work, the killed one's leases included.
	for {
		st, err := s.Stats(ctx)
		require.NoError(t, err)
		if st.Pending == 0 && st.InFlight == 0 {
			assert.Zero(t, st.Dead)
			break
		}
		require.True(t, time.Now().Before(deadline), "left: %+v", st)
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("all %d messages acked after %v", n, time.Since(began))
	for i, c := range consumers[1:] {
		require.NoError(t, c.cmd.Process.Signal(syscall.SIGTERM))
		c.wait(t, 30*time.Second, fmt.Sprintf("consumer %d", i+1))
	}

	checkDeliveries(t, n, start, killedAt, logs)
}

// A delivery is a D line of a consumer's log.
type delivery struct {
	consumer            int
	attempt             int
	due, recv, deadline time.Time
	payload             string
}

func checkDeliveries(t *testing.T, n int, start, killedAt time.Time, logs []string) {
	deliveries := map[string][]delivery{}
	acked := map[string]int{}
	lost := 0
	for ci, path := range logs {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		for line := range strings.Lines(string(b)) {
			f := strings.Fields(line)
			if len(f) == 0 {
				continue
			}
			switch f[0] {
			case "D":
				require.Len(t, f, 7, line)
				attempt, _ := strconv.Atoi(f[2])
				ns := make([]int64, 3)
				for j := range ns {
					ns[j], err = strconv.ParseInt(f[3+j], 10, 64)
					require.NoError(t, err, line)
				}
				deliveries[f[1]] = append(deliveries[f[1]], delivery{
					consumer: ci, attempt: attempt,
					due: time.Unix(0, ns[0]), recv: time.Unix(0, ns[1]), deadline: time.Unix(0, ns[2]),
					payload: f[6],
				})
			case "A":
				acked[f[1]]++
			case "L":
				lost++
			case "E":
				if ci != 0 { // the killed consumer may log anything
					t.Errorf("consumer %d: %s", ci, line)
				}
			}
		}
	}

	twice, unlogged, ackLogLost := 0, 0, 0
	for i := range n {
		id := childID(i)
		ds := deliveries[id]
		require.NotEmpty(t, ds, "%s never delivered", id)
		want := childDue(start, i)
		sort.Slice(ds, func(a, b int) bool { return ds[a].attempt < ds[b].attempt })
		for k, d := range ds {
			assert.Equal(t, strconv.FormatInt(want.UnixNano(), 10), d.payload, id)
			if d.attempt == 1 {
				assert.True(t, d.due.Equal(want), "%s: due %v, want %v", id, d.due, want)
			} else {
				// A message delivered again is due at the end of its
				// back-off.
				assert.False(t, d.due.Before(want), "%s: due %v, before %v", id, d.due, want)
			}
			assert.False(t, d.recv.Before(d.due), "%s delivered %v before its due time", id, d.due.Sub(d.recv))
			switch {
			case k > 0:
				twice++
				assert.Greater(t, d.attempt, ds[k-1].attempt)
				// The previous lease had expired: the message was
				// claimed again only after its deadline. The deadline
				// is on the consumer's clock, translated from Redis's,
				// and may be late by the time between the claim and
				// its return to the consumer: hence the tolerance,
				// well below the visibility timeout.
				prev := ds[k-1]
				assert.False(t, d.recv.Before(prev.deadline.Add(-500*time.Millisecond)),
					"%s delivered again %v before the lease of consumer %d expired", id, prev.deadline.Sub(d.recv), prev.consumer)
			case d.attempt > 1:
				// The killed consumer claimed it, and died before it
				// logged the delivery.
				unlogged++
				assert.False(t, d.recv.Before(killedAt), "%s: attempt %d before consumer 0 was killed", id, d.attempt)
			}
			if k > 0 && ds[k-1].attempt+1 < d.attempt {
				unlogged++
				assert.False(t, d.recv.Before(killedAt), "%s: attempt %d before consumer 0 was killed", id, d.attempt)
			}
		}
		switch acked[id] {
		case 1:
		case 0:
			// Acked by the killed consumer, which died before it could
			// log the ack: the message is gone from Redis (checked by
			// the caller), and only an Ack deletes.
			assert.Equal(t, 0, ds[len(ds)-1].consumer, "%s never acked", id)
			ackLogLost++
		default:
			t.Errorf("%s acked %d times", id, acked[id])
		}
	}
	// Each of the killed consumer's receivers held at most one lease.
	assert.LessOrEqual(t, unlogged+ackLogLost, childReceivers)
	t.Logf("%d messages delivered again after a lease expired, %d claimed and %d acked by the killed consumer without a log line, %d acks of a lost lease",
		twice+unlogged, unlogged, ackLogLost, lost)
}
