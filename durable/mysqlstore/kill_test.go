package mysqlstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestServerKilled: kill -9 of the server under load (a producer process
// enqueueing one message at a time, a worker process running the queue),
// then a restart: no enqueue that returned nil is lost, the producer's
// errors in between say what failed, and both processes recover without
// a restart of their own.
func TestServerKilled(t *testing.T) {
	testDBHandle(t)
	queue := freshQueue()
	dir := t.TempDir()
	workerLog, producerOut := filepath.Join(dir, "worker.log"), filepath.Join(dir, "producer.out")
	startChild(t, "worker", queue, workerLog+".out", childLogEnv+"="+workerLog)
	require.Eventually(t, func() bool { r, _ := readWorkerLogs(t, []string{workerLog}); return r == 1 },
		30*time.Second, 10*time.Millisecond, "the worker runs")
	const n = 400
	producerDone := startChild(t, "producer", queue, producerOut, childCountEnv+"=400")
	produced := func() (ok []string, errs []string) {
		b, _ := os.ReadFile(producerOut)
		for line := range strings.Lines(string(b)) {
			switch kind, rest, _ := strings.Cut(strings.TrimSpace(line), " "); kind {
			case "ok":
				ok = append(ok, rest)
			case "err":
				errs = append(errs, rest)
			}
		}
		return ok, errs
	}
	require.Eventually(t, func() bool { ok, _ := produced(); return len(ok) >= 100 },
		30*time.Second, 5*time.Millisecond, "the producer enqueues")

	require.NoError(t, server.Kill())
	ok, _ := produced()
	t.Logf("killed the server after %d enqueues", len(ok))
	require.NoError(t, server.StartAgain())
	restarted := time.Now()

	select {
	case <-producerDone:
	case <-time.After(60 * time.Second):
		t.Fatal("the producer did not finish within a minute of the restart")
	}
	t.Logf("the producer finished %v after the restart", time.Since(restarted).Round(time.Millisecond))
	ok, errs := produced()
	require.Len(t, ok, n, "the producer recovered and enqueued every message")
	t.Logf("the producer's errors: %d, first: %q", len(errs), first(errs))
	for _, e := range errs {
		require.True(t, strings.HasPrefix(e, "mysqlstore: enqueue: "), "an error that says what failed: %q", e)
	}
	require.Eventually(t, func() bool {
		_, got := readWorkerLogs(t, []string{workerLog})
		for _, id := range ok {
			if len(got[id]) == 0 {
				return false
			}
		}
		return true
	}, 60*time.Second, 20*time.Millisecond, "the worker recovered and received every message enqueued")
	t.Logf("the worker received every message %v after the restart", time.Since(restarted).Round(time.Millisecond))
	_, got := readWorkerLogs(t, []string{workerLog})
	again := 0
	for _, id := range ok {
		again += len(got[id]) - 1
	}
	t.Logf("delivered again (acks lost in the crash): %d", again)
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
