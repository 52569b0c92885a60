package durable

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOpenHeldFileFailsQuickly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q.db")
	q, err := Open(path)
	require.NoError(t, err)
	defer q.Close()

	start := time.Now()
	_, err = Open(path, WithLockTimeout(300*time.Millisecond))
	elapsed := time.Since(start)
	require.ErrorIs(t, err, ErrLocked)
	assert.Contains(t, err.Error(), path)
	assert.Less(t, elapsed, 3*time.Second)

	// The default timeout is a few seconds, not forever.
	start = time.Now()
	_, err = Open(path)
	require.ErrorIs(t, err, ErrLocked)
	assert.Less(t, time.Since(start), 5*time.Second)

	require.NoError(t, q.Close())
	q2, err := Open(path)
	require.NoError(t, err, "the file is free once the holder closed it")
	require.NoError(t, q2.Close())
}

func TestOpenNotAStore(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string][]byte{
		"text":    []byte("these are not the pages of a store\n"),
		"garbage": make([]byte, 64<<10), // zeros: no valid meta page
	} {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, content, 0o600))
		_, err := Open(path)
		require.ErrorIs(t, err, ErrCorrupt, name)
		got, _ := os.ReadFile(path)
		assert.Equal(t, content, got, "%s: Open must not overwrite a file it cannot read", name)
	}
	_, err := Open(filepath.Join(dir, "no", "such", "dir", "q.db"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "durable: open")
}

// TestDamagedPagesAreErrors overwrites pages of a store holding messages
// with garbage: every call must then return an error or a right result,
// and never panic.
func TestDamagedPagesAreErrors(t *testing.T) {
	for _, c := range []struct {
		from  float64
		pages int64 // 0: to the end
	}{{0.1, 0}, {0.3, 1}, {0.5, 1}, {0.6, 2}, {0.9, 0}} {
		t.Run(fmt.Sprintf("%d pages from %.0f%%", c.pages, c.from*100), func(t *testing.T) {
			damagedStore(t, c.from, c.pages)
		})
	}
}

func damagedStore(t *testing.T, from float64, pages int64) {
	path := filepath.Join(t.TempDir(), "q.db")
	ctx := context.Background()
	q, err := Open(path)
	require.NoError(t, err)
	for i := range 300 {
		require.NoError(t, q.Enqueue(ctx, Message{ID: fmt.Sprint("m", i), Payload: make([]byte, 100)}))
	}
	require.NoError(t, q.Close())

	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	fi, err := f.Stat()
	require.NoError(t, err)
	const page = 4096
	at := max(int64(float64(fi.Size()/page)*from), 2) * page // pages 0 and 1 are the meta pages
	n := fi.Size() - at
	if pages > 0 {
		n = min(n, pages*page)
	}
	garbage := make([]byte, n)
	for i := range garbage {
		garbage[i] = byte(i*7 + 3)
	}
	_, err = f.WriteAt(garbage, at)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	q, err = Open(path)
	if err != nil {
		t.Logf("Open: %v", err)
		require.ErrorIs(t, err, ErrCorrupt)
		return
	}
	defer q.Close()
	var errs []error
	if _, err := q.Stats(ctx); err != nil {
		errs = append(errs, err)
	}
	if _, err := q.DeadLetters(ctx, 10); err != nil {
		errs = append(errs, err)
	}
	received := 0
	for range 300 {
		rctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		d, err := q.Receive(rctx)
		cancel()
		if err != nil {
			errs = append(errs, err)
			break
		}
		if len(d.Payload) == 100 {
			received++
		}
	}
	if err := q.Enqueue(ctx, Message{ID: "m1"}); err != nil {
		errs = append(errs, err)
	}
	t.Logf("%d intact messages received; errors: %v", received, errs)
	if len(errs) == 0 { // the garbage hit only free pages
		assert.Equal(t, 300, received, "damaged data went unnoticed")
	}
}
