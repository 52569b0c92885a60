//go:build !unix && !windows

package main

import "time"

// cpuTime is not measured on this system: the CPU figures read 0.
func cpuTime() time.Duration { return 0 }
