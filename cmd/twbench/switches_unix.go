//go:build unix

package main

import "syscall"

// switches returns the process's context switches so far, voluntary (a
// thread went to sleep) and involuntary.
func switches() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return int64(ru.Nvcsw + ru.Nivcsw)
}
