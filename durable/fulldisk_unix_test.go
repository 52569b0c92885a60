//go:build unix

package durable

import (
	"context"
	"errors"
	"fmt"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fullDiskChild limits the size of the files it may write, as a full disk
// would, and enqueues 16 KiB messages until an error.
func fullDiskChild(path string) error {
	signal.Ignore(syscall.SIGXFSZ) // get EFBIG from write, not a signal
	const limit = 4 << 20
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		return err
	}
	q, err := Open(path)
	if err != nil {
		return err
	}
	ctx := context.Background()
	failures := 0
	for n := 0; n < 10000 && failures < 20; n++ {
		id := fmt.Sprint("m", n)
		if err := q.Enqueue(ctx, Message{ID: id, Payload: make([]byte, 16<<10)}); err != nil {
			failures++
			report("ERR", err.Error())
			continue
		}
		report("E", id)
	}
	if failures == 0 {
		return errors.New("the disk never filled")
	}
	return q.Close()
}

// TestFullDiskIsAnError fills the "disk" (a file size limit) under a
// child's queue: Enqueue must return errors, not panic, and every message
// it accepted must be in the file afterwards.
func TestFullDiskIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "full.db")
	cmd, sc, stderr := startChild(t, "fulldisk", "DURABLE_TEST_PATH="+path)
	enqueued := map[string]bool{}
	var errs []string
	for sc.Scan() {
		kind, rest, _ := strings.Cut(sc.Text(), " ")
		switch kind {
		case "E":
			enqueued[rest] = true
		case "ERR":
			errs = append(errs, rest)
		}
	}
	require.NoError(t, cmd.Wait(), "child stderr: %s", stderr)
	require.NotEmpty(t, errs)
	require.NotEmpty(t, enqueued)
	t.Logf("%d enqueues succeeded, then %d failed; first error: %s", len(enqueued), len(errs), errs[0])
	assert.Contains(t, errs[0], "file too large")

	delivered := drain(t, path, func(d *Delivery) {
		require.Len(t, d.Payload, 16<<10, "payload of %s", d.ID)
	})
	assert.Len(t, delivered, len(enqueued))
	for id := range enqueued {
		assert.Equal(t, 1, delivered[id], "message %s accepted before the disk filled", id)
	}
}
