//go:build !linux

package timingwheel

import "time"

// Elsewhere than Linux the driver sleeps on a runtime timer alone (see
// timerfd_linux.go): newTimerfd gives none, and no method is called.
type timerfd struct{}

func newTimerfd() *timerfd { return nil }

func (*timerfd) arm(time.Duration) {}

func (*timerfd) wake() {}

func (*timerfd) setDeadline(time.Duration) {}

func (*timerfd) wait() bool { return true }

func (*timerfd) close() {}
