package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable/boltstore"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// checkFile makes sure path is an existing, non-empty file before anything
// opens it: boltstore.Open would create a missing file, and turn an
// empty one into a new queue.
func checkFile(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s does not exist (twq opens existing queue files only)", path)
	case err != nil:
		return fmt.Errorf("%s: %w", path, err)
	case fi.IsDir():
		return fmt.Errorf("%s is a directory, not a queue file", path)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file, so not a queue file", path)
	case fi.Size() == 0:
		return fmt.Errorf("%s is empty, not a queue file", path)
	}
	return nil
}

// openFile opens the queue file at path for a command that writes, waiting
// up to wait for a process that holds it.
func openFile(path string, wait time.Duration) (*handle, error) {
	if err := checkFile(path); err != nil {
		return nil, err
	}
	s, err := boltstore.Open(path, boltstore.WithLockTimeout(wait))
	if err != nil {
		return nil, fileOpenError(path, wait, err)
	}
	return &handle{store: s, close: func() { _ = s.Close() }}, nil
}

// openFileSnapshot opens, for a read-only command, a private copy of the
// queue file at path. boltstore.Open writes to the file it opens
// (it commits a transaction that makes sure of its buckets, which rewrites
// bbolt's meta page), so twq opens the file read-only with bbolt, copies
// one consistent snapshot of it into a temporary directory, and opens the
// copy. The file is left byte for byte as it was. The copy costs the
// file's size in the temporary directory for the command's duration.
func openFileSnapshot(path string, wait time.Duration) (*handle, error) {
	if err := checkFile(path); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "twq-")
	if err != nil {
		return nil, fmt.Errorf("making a directory for a snapshot of %s: %w", path, err)
	}
	copyPath := filepath.Join(dir, "snapshot.db")
	if err := copyReadOnly(path, copyPath, wait); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s, err := boltstore.Open(copyPath)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fileOpenError(path, wait, err)
	}
	return &handle{store: s, close: func() {
		_ = s.Close()
		_ = os.RemoveAll(dir)
	}}, nil
}

// copyReadOnly writes a consistent copy of the bbolt file at path to dst,
// opening path read-only (a shared lock, which a running queue's
// exclusive lock keeps out).
func copyReadOnly(path, dst string, wait time.Duration) (err error) {
	defer func() {
		if r := recover(); r != nil { // bbolt panics on some damaged pages
			err = fmt.Errorf("%s is not a queue file, or a damaged one: %v", path, r)
		}
	}()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: wait})
	if err != nil {
		return fileOpenError(path, wait, err)
	}
	defer db.Close()
	if err := db.View(func(tx *bolt.Tx) error { return tx.CopyFile(dst, 0o600) }); err != nil {
		return fmt.Errorf("copying a snapshot of %s: %w", path, err)
	}
	return nil
}

// fileOpenError explains a failure to open the queue file at path.
func fileOpenError(path string, wait time.Duration, err error) error {
	switch {
	case errors.Is(err, boltstore.ErrLocked), errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("the queue file is held by another process (a running service?): %s is still locked after %v", path, wait)
	case errors.Is(err, boltstore.ErrCorrupt), errors.Is(err, berrors.ErrInvalid),
		errors.Is(err, berrors.ErrChecksum), errors.Is(err, berrors.ErrVersionMismatch):
		return fmt.Errorf("%s is not a queue file, or a damaged one: %w", path, err)
	}
	return fmt.Errorf("opening %s: %w", path, err)
}
