//go:build unix

package boltstore

import (
	"os"
	"syscall"
)

// unlockFile releases the flock bbolt took on f. Closing f alone did not
// release it here (see TestCorruptFileIsNotLeftLocked).
func unlockFile(f *os.File) {
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
