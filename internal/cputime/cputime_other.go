//go:build !unix && !windows

package cputime

import "time"

// Process cannot read the CPU time on this system: it reports false.
func Process() (time.Duration, bool) { return 0, false }
