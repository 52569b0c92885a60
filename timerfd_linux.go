//go:build linux

package timingwheel

import (
	"errors"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// On Linux an idle Go program waits for its next runtime timer in
// epoll_wait, whose timeout is in whole milliseconds, so a runtime timer
// fires up to a millisecond late (golang/go#44343). A timerfd that the
// runtime's netpoller watches wakes a goroutine when the kernel's timer
// expires, and no thread is held while it waits.
//
// A timerfd is one such timerfd, armed by the driver for the instant its
// next bucket is due. A wake wakes it by moving the fd's read deadline
// into the past. A read deadline a little after the instant is also the
// backstop for a busy program (see busyWaits): the runtime looks at the fd
// only when a P has nothing else to run (or every 10ms), but checks the
// deadline's timer each time it schedules.
//
// rc.Read forgets what the poller saw of the fd before the call, so a wait
// reads the fd first, to learn of an earlier expiry, unless the instant is
// still ahead or a wait has seen this arming expire (arming again resets
// the fd's count): a wait that starts in time makes no system call.
type timerfd struct {
	f  *os.File
	rc syscall.RawConn
	// readOnce is the function rc.Read calls (see wait). It reads with a
	// raw system call: a plain one would tell the runtime it entered a
	// system call, which wakes the runtime's monitor thread on an idle
	// program. Only the driver waits, so the fields below are the driver's.
	readOnce func(fd uintptr) bool
	asked    bool      // readOnce has been called in this wait
	armed    bool      // the fd is armed, and no wait has seen it expire
	expires  time.Time // no sooner than the fd's last arming expires
	buf      [8]byte   // receives the count of expirations
}

// newTimerfd returns a timerfd, or nil if the system refuses one (no
// timerfd, no file descriptor left), in which case the driver makes do
// with a runtime timer.
func newTimerfd() *timerfd {
	const clockMonotonic = 1
	fd, _, errno := syscall.RawSyscall(syscall.SYS_TIMERFD_CREATE, clockMonotonic,
		syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errno != 0 {
		return nil
	}
	// A nonblocking fd given to os.NewFile is registered with the
	// netpoller, so a read parks the goroutine rather than a thread.
	f := os.NewFile(fd, "timingwheel-timerfd") // not nil: fd is valid
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return nil
	}
	tfd := &timerfd{f: f, rc: rc}
	tfd.readOnce = func(fd uintptr) bool {
		if tfd.asked { // the poller saw the fd expire since the call
			tfd.armed = false
			return true
		}
		tfd.asked = true
		if !tfd.armed || time.Now().Before(tfd.expires) {
			return false // nothing has expired: wait for the poller
		}
		_, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&tfd.buf[0])), uintptr(len(tfd.buf)))
		if errno == syscall.EAGAIN {
			return false // wait for the poller
		}
		tfd.armed = false
		return true
	}
	return tfd
}

// arm sets the timerfd to expire once, d from now (d > 0), replacing any
// earlier setting.
func (tfd *timerfd) arm(d time.Duration) {
	var spec struct{ interval, value syscall.Timespec }
	spec.value = syscall.NsecToTimespec(int64(max(d, 1)))
	tfd.armed, tfd.expires = true, time.Now().Add(d) // before the kernel's now: never after its expiry
	_ = tfd.rc.Control(func(fd uintptr) {
		_, _, _ = syscall.RawSyscall6(syscall.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
	})
}

// wake ends a wait at once, or the next one if none is under way, by
// moving the read deadline into the past: the runtime then readies the
// waiting goroutine itself, with no system call. Safe from any goroutine,
// also after close.
func (tfd *timerfd) wake() { _ = tfd.f.SetReadDeadline(longAgo) }

var longAgo = time.Unix(1, 0)

// setDeadline makes wait return d from now at the latest; d 0 takes the
// deadline away.
func (tfd *timerfd) setDeadline(d time.Duration) {
	var at time.Time
	if d > 0 {
		at = time.Now().Add(d)
	}
	_ = tfd.f.SetReadDeadline(at)
}

// wait blocks until the fd expires (it reports true), or the deadline
// passes or a wake comes (false); an expiry or a wake already pending
// returns at once.
func (tfd *timerfd) wait() (expired bool) {
	tfd.asked = false
	err := tfd.rc.Read(tfd.readOnce)
	return !errors.Is(err, os.ErrDeadlineExceeded)
}

// close closes the timerfd; the driver calls it once it waits no more.
func (tfd *timerfd) close() { _ = tfd.f.Close() }
