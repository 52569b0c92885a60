//go:build !unix

package timingwheel

import "time"

// cpuTime is not measured here (BenchmarkIdle skips).
func cpuTime() (time.Duration, bool) { return 0, false }
