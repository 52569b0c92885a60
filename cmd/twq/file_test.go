package main

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/boltstore"
)

// newFileBackend seeds a queue file in a temporary directory.
func newFileBackend(t *testing.T) *backend {
	path := filepath.Join(t.TempDir(), "queue.db")
	s, err := boltstore.Open(path)
	require.NoError(t, err)
	soon := seed(t, s)
	require.NoError(t, s.Close())
	return &backend{
		queue: path,
		soon:  soon.UTC(),
		store: func(t *testing.T) (durable.Store, func()) {
			s, err := boltstore.Open(path)
			require.NoError(t, err)
			return s, func() { require.NoError(t, s.Close()) }
		},
		state:   func(t *testing.T) any { return fileState(t, path) },
		stateIs: "the directory, the file's bytes and its modification time are as they were",
	}
}

// dirState is what a read-only command must not change: the names in the
// queue file's directory, and the file's bytes, size and modification
// time.
type dirState struct {
	names   []string
	sum     [sha256.Size]byte
	size    int64
	modTime time.Time
}

func fileState(t *testing.T, path string) dirState {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	var st dirState
	for _, e := range entries {
		st.names = append(st.names, e.Name())
	}
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	st.sum = sha256.Sum256(b)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	st.size, st.modTime = fi.Size(), fi.ModTime()
	return st
}

// stats reads the queue's counts through its store, NextDue in UTC.
func (b *backend) stats(t *testing.T) durable.Stats {
	t.Helper()
	s, closeStore := b.store(t)
	defer closeStore()
	st, err := s.Stats(t.Context())
	require.NoError(t, err)
	st.NextDue = st.NextDue.UTC()
	return st
}

func TestFileErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	for _, cmd := range [][]string{{"stats"}, {"dead"}, {"requeue", "x"}, {"cancel", "x"}, {"enqueue", "x"}} {
		twq(t, append([]string{missing}, cmd...)...).failed(t, exitError, missing+" does not exist")
	}
	_, err := os.Stat(missing)
	require.ErrorIs(t, err, os.ErrNotExist, "no command created the file")

	twq(t, dir, "stats").failed(t, exitError, dir+" is a directory, not a queue file")

	empty := filepath.Join(dir, "empty.db")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	twq(t, empty, "enqueue", "x").failed(t, exitError, empty+" is empty, not a queue file")
	fi, err := os.Stat(empty)
	require.NoError(t, err)
	require.Zero(t, fi.Size(), "enqueue did not make the empty file a queue")

	text := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(text, []byte("not a queue, just some text that is long enough\n"), 0o600))
	before := fileState(t, text)
	twq(t, text, "stats").failed(t, exitError, text+" is not a queue file, or a damaged one")
	twq(t, text, "cancel", "x").failed(t, exitError, text+" is not a queue file, or a damaged one")
	require.Equal(t, before, fileState(t, text))
}

// TestFileHeldByAnotherQueue: while a queue holds the file, every command
// fails within -timeout with one clear line.
func TestFileHeldByAnotherQueue(t *testing.T) {
	b := newFileBackend(t)
	q, err := durable.Open(b.queue)
	require.NoError(t, err)
	defer func() { require.NoError(t, q.Close()) }()
	for _, cmd := range [][]string{{"stats"}, {"dead"}, {"requeue", "d1"}, {"cancel", "p1"}, {"enqueue", "x"}} {
		start := time.Now()
		twq(t, append([]string{"-timeout", "50ms", b.queue}, cmd...)...).failed(t, exitError,
			"the queue file is held by another process (a running service?)", b.queue, "50ms")
		require.Less(t, time.Since(start), 10*time.Second, "bounded by -timeout")
	}
}

// TestSnapshotIsRemoved: a read-only command's private copy of the file
// is gone when it ends, whether it succeeded or not.
func TestSnapshotIsRemoved(t *testing.T) {
	b := newFileBackend(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	twq(t, b.queue, "stats").ok(t)
	twq(t, b.queue, "dead", "-json").ok(t)
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Empty(t, entries)
}
