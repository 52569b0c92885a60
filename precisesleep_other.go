//go:build !linux

package timingwheel

import "time"

// Elsewhere the runtime's timers wait with a finer timeout than Linux's
// epoll_wait (see precisesleep_linux.go): the driver sleeps on its runtime
// timer all the way.
const (
	preciseWindow = 0
	preciseStep   = 0
)

func sleepPrecisely(time.Duration) {}
