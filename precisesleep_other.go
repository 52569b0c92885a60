//go:build !linux

package timingwheel

import "time"

// WithPreciseSleep is for Linux (see precisesleep_linux.go); elsewhere the
// driver sleeps on its runtime timer all the way.
const (
	preciseWindow = 0
	preciseStep   = 0
)

func sleepPrecisely(time.Duration) {}
