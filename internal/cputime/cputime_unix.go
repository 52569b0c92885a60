//go:build unix

package cputime

import (
	"syscall"
	"time"
)

// Process returns the user+system CPU time the process has used so far,
// from getrusage(RUSAGE_SELF), and whether it could read it.
func Process() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
