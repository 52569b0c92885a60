//go:build !linux

package timingwheel

import "time"

// Elsewhere than Linux the driver sleeps on a runtime timer alone (see
// timerfd_linux.go): newWakeup gives none, and no method is called.
type wakeup struct{}

func newWakeup() *wakeup { return nil }

func (*wakeup) arm(time.Duration) {}

func (*wakeup) poke() {}

func (*wakeup) setDeadline(time.Duration) {}

func (*wakeup) wait() bool { return true }

func (*wakeup) close() {}
