//go:build unix

package timingwheel

import (
	"syscall"
	"time"
)

// cpuTime returns the user+system CPU time of the process, and whether
// it could.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
