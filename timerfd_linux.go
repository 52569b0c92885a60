//go:build linux

package timingwheel

import (
	"os"
	"syscall"
	"time"
	"unsafe"
)

// On Linux an idle Go program waits for its next runtime timer in
// epoll_wait, whose timeout is in whole milliseconds, so a runtime timer
// fires up to a millisecond late (golang/go#44343). epoll_wait returns as
// soon as a watched fd is ready, though: a timerfd that the runtime's
// netpoller watches wakes a goroutine at the instant the kernel's timer
// expires, and no thread or P is held while it waits.
//
// A wakeup is one such timerfd and a goroutine that reads it through the
// netpoller and signals c at each expiry. The driver arms it for the
// instant its next bucket is due, alongside its runtime timer, and takes
// whichever fires first. Each wheel on the real clock owns one from Start
// to Stop: one file descriptor and one parked goroutine per started wheel.
type wakeup struct {
	f    *os.File
	fd   uintptr
	c    chan struct{} // signalled, without blocking, at each expiry
	done chan struct{} // closed when the reading goroutine exits
}

// newWakeup returns a started wakeup, or nil if the system refuses one (no
// timerfd, no file descriptor left), in which case the driver makes do
// with its runtime timer.
func newWakeup() *wakeup {
	const clockMonotonic = 1
	fd, _, errno := syscall.RawSyscall(syscall.SYS_TIMERFD_CREATE, clockMonotonic,
		syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errno != 0 {
		return nil
	}
	// A nonblocking fd given to os.NewFile is registered with the
	// netpoller, so a Read parks the goroutine rather than a thread.
	f := os.NewFile(fd, "timingwheel-timerfd")
	if f == nil {
		_ = syscall.Close(int(fd))
		return nil
	}
	wk := &wakeup{f: f, fd: fd, c: make(chan struct{}, 1), done: make(chan struct{})}
	go wk.read()
	return wk
}

// read signals c at each expiry of the timerfd, until the file is closed.
// It reads through the netpoller with a raw system call: a read of a
// nonblocking fd never blocks, and a plain one would tell the runtime it
// entered a system call, which wakes the runtime's monitor thread from
// its sleep on an idle program, at every expiry.
func (wk *wakeup) read() {
	defer close(wk.done)
	rc, err := wk.f.SyscallConn()
	if err != nil {
		return
	}
	var expirations [8]byte // the count of expirations since the last read
	readOnce := func(fd uintptr) bool {
		_, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&expirations[0])), 8)
		return errno != syscall.EAGAIN // false: wait until the fd is ready
	}
	for {
		if err := rc.Read(readOnce); err != nil {
			return
		}
		select {
		case wk.c <- struct{}{}:
		default:
		}
	}
}

// arm sets the timerfd to expire once, d from now, replacing any earlier
// setting; d > 0. A stale expiry of an earlier setting may still be
// signalled: the driver takes it for a spurious wake-up.
func (wk *wakeup) arm(d time.Duration) {
	if wk == nil {
		return
	}
	var spec struct{ interval, value syscall.Timespec }
	spec.value = syscall.NsecToTimespec(int64(d))
	_, _, _ = syscall.RawSyscall6(syscall.SYS_TIMERFD_SETTIME, wk.fd, 0,
		uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
}

// channel returns the channel signalled at each expiry; nil (never ready)
// for a nil wakeup.
func (wk *wakeup) channel() <-chan struct{} {
	if wk == nil {
		return nil
	}
	return wk.c
}

// close closes the timerfd and waits for the reading goroutine to exit.
func (wk *wakeup) close() {
	if wk == nil {
		return
	}
	_ = wk.f.Close()
	<-wk.done
}
