package pgstore

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// A delivery is a D line of a consumer's log.
type delivery struct {
	consumer            int // the index of its log
	attempt             int
	due, recv, deadline time.Time
	payload             string
}

// A msgLog is what the consumers' logs say of a message.
type msgLog struct {
	deliveries []delivery // in the order of the logs, then of the lines
	acks       int        // A lines
	lost       int        // L lines
}

// readLogs reads the logs of consumers (see runConsumer), and returns
// what they say of each message, and the E lines of each log.
func readLogs(t *testing.T, logs []string) (map[string]*msgLog, [][]string) {
	t.Helper()
	out := map[string]*msgLog{}
	errs := make([][]string, len(logs))
	get := func(id string) *msgLog {
		if out[id] == nil {
			out[id] = &msgLog{}
		}
		return out[id]
	}
	for ci, path := range logs {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		for line := range strings.Lines(string(b)) {
			f := strings.Fields(line)
			switch {
			case len(f) == 0:
			case f[0] == "D" && len(f) == 7:
				attempt, err := strconv.Atoi(f[2])
				require.NoError(t, err, line)
				ns := make([]time.Time, 3)
				for j := range ns {
					v, err := strconv.ParseInt(f[3+j], 10, 64)
					require.NoError(t, err, line)
					ns[j] = time.Unix(0, v)
				}
				m := get(f[1])
				m.deliveries = append(m.deliveries, delivery{consumer: ci, attempt: attempt,
					due: ns[0], recv: ns[1], deadline: ns[2], payload: f[6]})
			case f[0] == "A" && len(f) == 2:
				get(f[1]).acks++
			case f[0] == "L" && len(f) == 2:
				get(f[1]).lost++
			case f[0] == "E":
				errs[ci] = append(errs[ci], line)
			default:
				t.Errorf("%s: %q", path, line)
			}
		}
	}
	return out, errs
}

// countAcks counts the A lines of logs.
func countAcks(logs []string) int {
	n := 0
	for _, path := range logs {
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(f)
		_ = f.Close()
		n += strings.Count("\n"+string(b), "\nA ")
	}
	return n
}

// TestConsumerKilled runs three processes on one queue: a producer that
// enqueues 600 messages due over two seconds, and two consumers with a
// visibility timeout of 2.5 seconds: one (killed) with Run, 8 workers
// whose handlers take 20ms, so that it always holds leases, some of them
// claimed held for its workers; the other with Receive and Ack from 8
// goroutines. Once half the messages are acked, the first is killed with
// SIGKILL. Then the survivor finishes: the queue ends empty (every
// message acked, none dead), and the logs say that no message was handed
// out before its due time, that every message was acked once (but those
// the killed consumer acked without logging it, at most as many as it
// could hold), and that a message was delivered again only if the killed
// consumer had it, and not before the lease it had expired.
func TestConsumerKilled(t *testing.T) {
	pool := testPool(t)
	const (
		n          = 600
		visibility = 2500 * time.Millisecond
		handling   = 20 * time.Millisecond
	)
	schema := newSchema(t)
	queue := freshQueue()
	s := openStore(t, pool, queue, WithSchema(schema))
	start := dbNow(t).Add(time.Second)
	dir := t.TempDir()
	var (
		logs      []string
		consumers []*child
	)
	for i, role := range []string{"runner", "consumer"} {
		log := filepath.Join(dir, fmt.Sprintf("%s%d.log", role, i))
		logs = append(logs, log)
		env := childEnvOf(role, fmt.Sprintf("%s-%s-%d", schema, role, i), schema, queue)
		env[childLogEnv] = log
		env[childVisEnv] = strconv.FormatInt(int64(visibility), 10)
		env[childDelayEnv] = strconv.FormatInt(int64(handling), 10)
		consumers = append(consumers, startChild(t, env))
	}
	env := childEnvOf("producer", schema+"-producer", schema, queue)
	env[childCountEnv] = strconv.Itoa(n)
	env[childStartEnv] = strconv.FormatInt(start.UnixNano(), 10)
	producer := startChild(t, env)

	deadline := time.Now().Add(2 * time.Minute)
	for countAcks(logs) < n/2 {
		require.True(t, time.Now().Before(deadline), "only %d acks", countAcks(logs))
		time.Sleep(5 * time.Millisecond)
	}
	consumers[0].kill(t)
	killedAt := time.Now()
	t.Logf("the runner killed %v after the start, at %d acks", killedAt.Sub(start), countAcks(logs))
	producer.wait(t, time.Until(deadline), "producer")

	for {
		st, err := s.Stats(ctx)
		require.NoError(t, err)
		if st.Pending == 0 && st.InFlight == 0 {
			assert.Zero(t, st.Dead)
			break
		}
		require.True(t, time.Now().Before(deadline), "left: %+v", st)
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("all acked %v after the start, %v after the kill", time.Since(start), time.Since(killedAt))
	require.NoError(t, consumers[1].cmd.Process.Signal(syscall.SIGTERM))
	consumers[1].wait(t, 30*time.Second, "consumer")
	_, err := s.Get(ctx, childID(0))
	require.ErrorIs(t, err, durable.ErrNotFound)

	ms, errs := readLogs(t, logs)
	assert.Empty(t, errs[1], "errors of the survivor")
	var again, unlogged, ackUnlogged, lost int
	byConsumer := make([]int, len(logs))
	for i := range n {
		id := childID(i)
		want := childDue(start, i)
		m := ms[id]
		require.NotNil(t, m, "%s: never delivered", id)
		ds := m.deliveries
		require.NotEmpty(t, ds, "%s: never delivered", id)
		slices.SortStableFunc(ds, func(a, b delivery) int { return a.attempt - b.attempt })
		for k, d := range ds {
			byConsumer[d.consumer]++
			assert.Equal(t, strconv.FormatInt(want.UnixNano(), 10), d.payload, id)
			// A message the killed runner held comes back unhandled, at
			// attempt 1, due when the reap gave it back.
			assert.False(t, d.due.Before(want), "%s: due %v, before %v", id, d.due, want)
			assert.False(t, d.recv.Before(want), "%s delivered %v before its due time", id, want.Sub(d.recv))
			assert.False(t, d.recv.Before(d.due), "%s delivered %v before its due time", id, d.due.Sub(d.recv))
			if k > 0 {
				again++
				prev := ds[k-1]
				assert.Greater(t, d.attempt, prev.attempt, id)
				assert.Equal(t, 0, prev.consumer, "%s delivered again after a delivery by the survivor", id)
				assert.False(t, d.recv.Before(killedAt), "%s delivered again before the kill", id)
				// The lease of the previous delivery had expired. Its
				// deadline is on the consumer's clock, converted from
				// the database's, give or take the time of a claim's
				// round trip: hence the slack, well below the
				// visibility timeout.
				assert.False(t, d.recv.Before(prev.deadline.Add(-500*time.Millisecond)),
					"%s delivered again %v before the lease of the first delivery expired", id, prev.deadline.Sub(d.recv))
				// And counted from the first hand-out: the lease ran
				// from the message's claim or due time, which a
				// message held for Run's workers may precede by a
				// while on a loaded machine.
				assert.False(t, d.recv.Before(prev.recv.Add(visibility-time.Second)),
					"%s delivered again %v after the first delivery", id, d.recv.Sub(prev.recv))
			}
			prevAttempt := 0
			if k > 0 {
				prevAttempt = ds[k-1].attempt
			}
			if d.attempt > prevAttempt+1 {
				// Claimed by the killed consumer, which died before it
				// handed the message out (or logged it).
				unlogged++
				assert.Equal(t, 1, d.consumer, id)
				assert.False(t, d.recv.Before(killedAt), "%s: attempt %d before the kill", id, d.attempt)
			}
		}
		last := ds[len(ds)-1]
		switch m.acks {
		case 1:
		case 0:
			// Acked by the killed consumer, which died before it logged
			// the ack: the message is gone (Stats), and only an Ack
			// deletes.
			assert.Equal(t, 0, last.consumer, "%s: never acked", id)
			ackUnlogged++
		default:
			t.Errorf("%s acked %d times", id, m.acks)
		}
		if last.consumer == 1 {
			assert.Equal(t, 1, m.acks, "%s: the survivor's ack", id)
		}
		lost += m.lost
	}
	t.Logf("deliveries by consumer %v; %d deliveries again after the kill (%d of messages claimed by the killed consumer and not logged); %d acks of the killed consumer unlogged; %d acks of lost leases",
		byConsumer, again+unlogged, unlogged, ackUnlogged, lost)
	assert.Positive(t, again+unlogged, "the killed consumer held leases, delivered again after they expired")
	// The killed consumer held at most a message per worker and four more
	// each (Run's window), and a handful of acks to write.
	assert.LessOrEqual(t, again+unlogged+ackUnlogged, childReceivers*5+64)
	for i, k := range byConsumer {
		assert.Positive(t, k, "consumer %d delivered nothing", i)
	}
}
