package timingwheel

import (
	"reflect"
	"runtime"
	"time"
	"unsafe"
	"weak"
)

// Channel timers are garbage-collected once unreferenced, as time.Timer's
// are since Go 1.23 (see NewTimer), so that
//
//	select {
//	case <-w.After(time.Hour):
//	case <-ctx.Done():
//	}
//
// in a loop does not keep a timer per iteration for an hour.
//
// A program may reference a channel timer through C alone (After returns
// only C), so C decides: the Timer the program holds (the handle) refers to
// C and to a second Timer (the core), which the wheel links and which refers
// to C only weakly. A cleanup attached to C stops the core once C is
// unreachable. AfterFunc timers are not collected: their tasks must run.

// chanTimer is what NewTimer allocates; the program gets &Timer, the handle,
// never the core. The Timer methods tell a handle by its state word,
// kindChan for good, not by C, which a program may set on any Timer.
type chanTimer struct {
	Timer        // the handle: C and w; never linked
	core  *Timer // linked in the lanes; sends on C through a weak pointer
}

// chanHeader stands for the runtime's channel structure, which a channel
// value points to: a weak pointer and a cleanup need a pointer to it.
type chanHeader struct{ _ uintptr }

func (w *TimingWheel) newChanTimer() *chanTimer {
	core := &Timer{w: w}
	h := &chanTimer{Timer: Timer{state: kindChan, C: w.chanFor(core), w: w}, core: core}
	h.when = int64(uintptr(unsafe.Pointer(h))) // the handle needs no deadline: see chanTimer
	return h
}

// chanFor makes core, a new timer, the core of a channel timer (or of a
// Ticker) and returns its channel C: core's task sends the time the driver
// fired it on C without blocking, through a weak pointer, and a cleanup
// stops core once C is unreachable.
func (w *TimingWheel) chanFor(core *Timer) chan time.Time {
	c := make(chan time.Time, 1)
	hdr := (*chanHeader)(reflect.ValueOf(c).UnsafePointer())
	ref := weak.Make(hdr)
	core.f = func() {
		if hdr := ref.Value(); hdr != nil {
			select {
			case *(*chan time.Time)(unsafe.Pointer(&hdr)) <- w.firedAt:
			default:
			}
		}
	}
	runtime.AddCleanup(hdr, func(core *Timer) { core.stop() }, core)
	return c
}

// chanTimer returns the chanTimer whose handle t is (t is of kindChan). A
// handle's when holds its own address, so that a copy of it, which is not
// followed by a core, panics rather than reading past its end.
func (t *Timer) chanTimer() *chanTimer {
	if uintptr(t.when) != uintptr(unsafe.Pointer(t)) {
		panic(errCopied)
	}
	return (*chanTimer)(unsafe.Pointer(t))
}

func (h *chanTimer) stop() bool {
	stopped := stopChan(h.core, h.C)
	runtime.KeepAlive(h) // C stays reachable: no cleanup stops the core meanwhile
	return stopped
}

// stopChan stops core, the core of a channel timer or a Ticker, then
// drains c, its channel, so that no stale value is received once it
// returns; true if either found the timer active.
func stopChan(core *Timer, c <-chan time.Time) bool {
	stopped := core.stop()
	drained := drain(c)
	return stopped || drained
}
