package pgstore

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// The schedule of TestUpsertAndCancelAcrossProcesses: message i is due at
// start + i·mutSpacing, and cancelled or replaced mutOffset(i) before,
// inside the 50ms before its due time in which a receiver claims it
// ahead and holds it.
const mutSpacing = 5 * time.Millisecond

func mutDue(start time.Time, i int) time.Time { return start.Add(time.Duration(i) * mutSpacing) }

// mutOffset is 0 to 39ms.
func mutOffset(i int) time.Duration { return time.Duration(i*7919%40) * time.Millisecond }

// A mutation is what the parent did to a message.
type mutation struct {
	ahead    bool      // Get found it in flight, claimed ahead, just before
	cancel   string    // the result of Cancel: found, none or inflight
	returned time.Time // when Cancel, or the replacing Enqueue, returned
}

// TestUpsertAndCancelAcrossProcesses has two consumer processes receive
// from a queue, one with Receive, one with Run, while the parent, a
// little before each message's due time (0 to 39ms, while a consumer
// holds it claimed ahead, or claimed held for Run's workers), cancels
// half of them and replaces the other half by an Enqueue of the same ID
// and due time, with a new payload. Then the logs say that no message
// whose Cancel returned true was handed out, that a Cancel that returned
// before the due time found the message; that every replaced message was
// handed out once with its new payload, and never with the old one if
// the replacing Enqueue returned before the due time; that no message
// was handed out before its due time; and that none was delivered twice
// (every delivery is attempt 1: no lease expired, none was lost to a
// write of its own).
func TestUpsertAndCancelAcrossProcesses(t *testing.T) {
	pool := testPool(t)
	const n = 400
	schema := newSchema(t)
	queue := freshQueue()
	s := openStore(t, pool, queue, WithSchema(schema))
	dir := t.TempDir()
	var (
		logs []string
		kids []*child
	)
	for i, role := range []string{"consumer", "runner"} {
		log := filepath.Join(dir, fmt.Sprintf("%s%d.log", role, i))
		logs = append(logs, log)
		env := childEnvOf(role, fmt.Sprintf("%s-%s-%d", schema, role, i), schema, queue)
		env[childLogEnv] = log
		env[childVisEnv] = strconv.FormatInt(int64(time.Minute), 10)
		kids = append(kids, startChild(t, env))
	}
	start := dbNow(t).Add(1500 * time.Millisecond)
	var msgs []durable.Message
	for i := range n {
		msgs = append(msgs, durable.Message{ID: childID(i), Payload: []byte("v1"), Due: mutDue(start, i)})
	}
	require.NoError(t, s.Enqueue(ctx, msgs))

	muts := make([]mutation, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id, due := childID(i), mutDue(start, i)
			time.Sleep(time.Until(due.Add(-mutOffset(i))))
			m := &muts[i]
			info, err := s.Get(ctx, id)
			switch {
			case err == nil:
				m.ahead = info.State == durable.InFlight && time.Now().Before(due)
			case !errors.Is(err, durable.ErrNotFound): // acked already, if late
				errs[i] = err
				return
			}
			if i%2 == 0 {
				found, err := s.Cancel(ctx, id)
				m.returned = time.Now()
				switch {
				case errors.Is(err, durable.ErrInFlight):
					m.cancel = "inflight"
				case err != nil:
					errs[i] = err
				case found:
					m.cancel = "found"
				default:
					m.cancel = "none"
				}
				return
			}
			errs[i] = s.Enqueue(ctx, []durable.Message{{ID: id, Payload: []byte("v2"), Due: due}})
			m.returned = time.Now()
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	require.Eventually(t, func() bool {
		st, err := s.Stats(ctx)
		require.NoError(t, err)
		return st == durable.Stats{}
	}, time.Minute, 10*time.Millisecond, "every message acked or cancelled")
	for i, k := range kids {
		require.NoError(t, k.cmd.Process.Signal(syscall.SIGTERM))
		k.wait(t, 30*time.Second, logs[i])
	}

	ms, lineErrs := readLogs(t, logs)
	for i := range logs {
		assert.Empty(t, lineErrs[i], logs[i])
	}
	var ahead, cancelledBeforeDue, replacedBeforeDue, oldHandedOut int
	byProcess := make([]int, len(logs))
	for i := range n {
		id, due, mu := childID(i), mutDue(start, i), muts[i]
		m := ms[id]
		if m == nil {
			m = &msgLog{}
		}
		if mu.ahead {
			ahead++
		}
		for _, d := range m.deliveries {
			byProcess[d.consumer]++
			assert.Equal(t, 1, d.attempt, "%s: delivered again (%s)", id, d.payload)
			assert.True(t, d.due.Equal(due), "%s: due %v, want %v", id, d.due, due)
			assert.False(t, d.recv.Before(due), "%s handed out %v before its due time", id, due.Sub(d.recv))
		}
		if i%2 == 0 {
			if mu.returned.Before(due) {
				cancelledBeforeDue++
				assert.Equal(t, "found", mu.cancel, "%s: cancelled %v before its due time, and not found", id, due.Sub(mu.returned))
			}
			if mu.cancel == "found" {
				assert.Empty(t, m.deliveries, "%s: cancelled, and handed out", id)
			} else {
				require.Len(t, m.deliveries, 1, "%s: cancel %s", id, mu.cancel)
				assert.Equal(t, "v1", m.deliveries[0].payload, id)
				assert.Equal(t, 1, m.acks, id)
			}
			assert.Zero(t, m.lost, id)
			continue
		}
		var v1, v2 int
		for _, d := range m.deliveries {
			switch d.payload {
			case "v1":
				v1++
			case "v2":
				v2++
			default:
				t.Errorf("%s: payload %q", id, d.payload)
			}
		}
		assert.Equal(t, 1, v2, "%s: the new version handed out %d times", id, v2)
		if mu.returned.Before(due) {
			replacedBeforeDue++
			assert.Zero(t, v1, "%s: replaced %v before its due time, and the old version handed out", id, due.Sub(mu.returned))
		}
		oldHandedOut += v1
		assert.LessOrEqual(t, v1, 1, id)
		// An old version handed out just before a late replacement may
		// have its Ack refused: the replacement took its lease.
		assert.LessOrEqual(t, m.lost, v1, id)
		assert.Equal(t, len(m.deliveries), m.acks+m.lost, id)
	}
	t.Logf("%d of %d messages claimed ahead just before their cancel or replacement; %d cancels and %d replacements returned before the due time; %d old versions handed out before a late replacement; deliveries by process %v",
		ahead, n, cancelledBeforeDue, replacedBeforeDue, oldHandedOut, byProcess)
	for i, k := range byProcess {
		assert.Positive(t, k, "%s delivered nothing", logs[i])
	}
	assert.Greater(t, cancelledBeforeDue, n/4, "most cancels come before the due time")
	assert.Greater(t, replacedBeforeDue, n/4, "most replacements come before the due time")
	assert.Greater(t, ahead, n/10, "messages held claimed ahead when they were cancelled or replaced")
}
