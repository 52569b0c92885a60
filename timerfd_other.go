//go:build !linux

package timingwheel

import "time"

// Elsewhere than Linux the driver sleeps on its runtime timer alone (see
// timerfd_linux.go); a nil *wakeup does nothing.
type wakeup struct{}

func newWakeup() *wakeup { return nil }

func (*wakeup) arm(time.Duration) {}

func (*wakeup) channel() <-chan struct{} { return nil }

func (*wakeup) close() {}
