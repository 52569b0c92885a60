//go:build linux

package timingwheel

import (
	"syscall"
	"time"
)

// On Linux, a Go program whose goroutines are all asleep waits for its
// next runtime timer in epoll_wait, whose timeout is in whole
// milliseconds, so a runtime timer fires up to a millisecond late (about
// 0.5 ms at the median on our machine), on top of the wheel's rounding to
// the end of a tick. So a driver with WithPreciseSleep sets its runtime
// timer preciseWindow before the next bucket is due and sleeps the last
// stretch with nanosleep, which the kernel ends within about 0.1 ms, in
// steps of at most preciseStep, between which it heeds new earlier
// buckets, Sync and Stop. The Go runtime may one day wait with
// epoll_pwait2, which takes nanoseconds (golang/go#53824).
const (
	preciseWindow = 1500 * time.Microsecond
	preciseStep   = 500 * time.Microsecond
)

// sleepPrecisely blocks the calling thread for about d. An interrupted
// sleep returns early, which the driver's loop allows for.
func sleepPrecisely(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil)
}
