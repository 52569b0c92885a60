//go:build !unix

package boltstore

import "os"

// unlockFile does nothing here: bbolt's lock (LockFileEx on Windows) goes
// with the file handle, which the caller closes next.
func unlockFile(*os.File) {}
