package redisstore

import (
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
)

// TestUpsertAndCancelAcrossProcesses runs a mutator process (see
// runMutator), which cancels or replaces messages 0 to 39ms before their
// due time while receivers of two other processes (one receiving with
// Receive, one with Run), and its own, hold them claimed ahead or held. Then it checks every log: a cancelled message (Cancel
// true) is never handed out, and a Cancel that returned before the due
// time found the message; the replaced version is never handed out if
// the replacing Enqueue's reply came before the due time; no message is
// handed out before its due time, and none is revoked by its own Enqueue
// (every delivery is attempt 1: no lease expired).
func TestUpsertAndCancelAcrossProcesses(t *testing.T) {
	n := 1500
	if testing.Short() {
		n = 600
	}
	srv := startRedis(t)
	c := srv.client(t)
	s := openStore(t, c, childQueue)
	start := redisNow(t, c).Add(time.Second)
	dir := t.TempDir()
	var logs []string
	var kids []*child
	for i, role := range []string{"consumer", "runner", "mutator"} {
		log := filepath.Join(dir, role+strconv.Itoa(i)+".log")
		logs = append(logs, log)
		kids = append(kids, startChild(t, role, srv.addr(), n, start, log))
	}
	deadline := time.Now().Add(time.Minute + time.Duration(n)*mutSpacing)
	for {
		b, _ := os.ReadFile(logs[2])
		st, err := s.Stats(ctx)
		require.NoError(t, err)
		if strings.Contains(string(b), "\nX\n") || strings.HasPrefix(string(b), "X\n") {
			if st.Pending == 0 && st.InFlight == 0 {
				assert.Zero(t, st.Dead)
				break
			}
		}
		require.True(t, time.Now().Before(deadline), "left: %+v", st)
		time.Sleep(50 * time.Millisecond)
	}
	for i, k := range kids {
		require.NoError(t, k.cmd.Process.Signal(syscall.SIGTERM))
		k.wait(t, 30*time.Second, "child "+strconv.Itoa(i))
	}
	checkMutations(t, n, start, logs)
}

// mutLog is what the logs of the upsert-and-cancel test say of a message.
type mutLog struct {
	deliveries []delivery
	acks       int
	lost       int       // acks that returned ErrLeaseLost
	cancel     string    // found, none or inflight
	cancelled  time.Time // when Cancel returned
	replaced   time.Time // when the replacing Enqueue's reply came
}

func readMutLogs(t *testing.T, logs []string) map[string]*mutLog {
	out := map[string]*mutLog{}
	get := func(id string) *mutLog {
		if out[id] == nil {
			out[id] = &mutLog{}
		}
		return out[id]
	}
	ns := func(s string) time.Time {
		v, err := strconv.ParseInt(s, 10, 64)
		require.NoError(t, err)
		return time.Unix(0, v)
	}
	for ci, path := range logs {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		for line := range strings.Lines(string(b)) {
			f := strings.Fields(line)
			switch {
			case len(f) == 0 || f[0] == "X":
			case f[0] == "D" && len(f) == 7:
				attempt, _ := strconv.Atoi(f[2])
				m := get(f[1])
				m.deliveries = append(m.deliveries, delivery{consumer: ci, attempt: attempt,
					due: ns(f[3]), recv: ns(f[4]), deadline: ns(f[5]), payload: f[6]})
			case f[0] == "A":
				get(f[1]).acks++
			case f[0] == "L":
				get(f[1]).lost++
			case f[0] == "C" && len(f) == 4:
				m := get(f[1])
				m.cancel, m.cancelled = f[2], ns(f[3])
			case f[0] == "U" && len(f) == 3:
				get(f[1]).replaced = ns(f[2])
			default:
				t.Errorf("%s: %s", path, line)
			}
		}
	}
	return out
}

func checkMutations(t *testing.T, n int, start time.Time, logs []string) {
	ms := readMutLogs(t, logs)
	var cancelledBeforeDue, replacedBeforeDue, oldHandedOut int
	var late []time.Duration
	byProcess := make([]int, len(logs))
	for i := range n {
		id := childID(i)
		due := mutDue(start, i)
		m := ms[id]
		require.NotNil(t, m, "%s: nothing logged", id)
		for _, d := range m.deliveries {
			byProcess[d.consumer]++
			assert.Equal(t, 1, d.attempt, "%s: delivered again (%s), a lease was revoked or lost", id, d.payload)
			assert.True(t, d.due.Equal(due), "%s: due %v, want %v", id, d.due, due)
			assert.False(t, d.recv.Before(due), "%s handed out %v before its due time", id, due.Sub(d.recv))
			late = append(late, d.recv.Sub(due))
		}
		switch i % 3 {
		case 0:
			if m.cancelled.Before(due) {
				cancelledBeforeDue++
				assert.Equal(t, "found", m.cancel, "%s: cancelled %v before its due time, not found", id, due.Sub(m.cancelled))
			}
			if m.cancel == "found" {
				assert.Empty(t, m.deliveries, "%s: cancelled, and handed out", id)
			} else {
				assert.Len(t, m.deliveries, 1, id)
				assert.Equal(t, 1, m.acks, id)
			}
			assert.Zero(t, m.lost, id)
		case 1:
			require.False(t, m.replaced.IsZero(), "%s: not replaced", id)
			var v1, v2 int
			for _, d := range m.deliveries {
				if d.payload == "v1" {
					v1++
				} else {
					v2++
				}
			}
			assert.Equal(t, 1, v2, "%s: the new version delivered %d times", id, v2)
			if m.replaced.Before(due) {
				replacedBeforeDue++
				assert.Zero(t, v1, "%s: replaced %v before its due time, and the old version handed out", id, due.Sub(m.replaced))
			}
			oldHandedOut += v1
			assert.LessOrEqual(t, v1, 1, id)
			// An old version handed out just before the replacement
			// may have its Ack refused: the replacement took its lease.
			assert.LessOrEqual(t, m.lost, v1, id)
			assert.Equal(t, len(m.deliveries), m.acks+m.lost, id)
		default:
			assert.Len(t, m.deliveries, 1, id)
			assert.Equal(t, 1, m.acks, id)
			assert.Zero(t, m.lost, id)
		}
	}
	t.Logf("%d cancels and %d replacements returned before the due time; %d old versions handed out before a late replacement; deliveries by process %v",
		cancelledBeforeDue, replacedBeforeDue, oldHandedOut, byProcess)
	for i, k := range byProcess {
		assert.Positive(t, k, "process %d (%s) delivered nothing", i, filepath.Base(logs[i]))
	}
	slices.Sort(late)
	require.NotEmpty(t, late)
	t.Logf("lateness of %d deliveries: p50 %v, p99 %v, max %v", len(late),
		late[len(late)/2], late[len(late)*99/100], late[len(late)-1])
	assert.Greater(t, cancelledBeforeDue, n/6, "most cancels come before the due time")
	assert.Greater(t, replacedBeforeDue, n/6, "most replacements come before the due time")
}
