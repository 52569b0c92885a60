package timingwheel

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
)

// transitions is the table of timer.go's comment, which move checks each
// change of a timer's state against in a build with the tag
// timingwheel_debug: the statuses it goes from and to, and the function
// that makes it.
var transitions = []struct{ from, to, by string }{
	{"new", "pending", "insert"},
	{"new", "fired", "handBeforeStart"},
	{"idle", "locked", "own"},
	{"pending", "idle", "unlink"},
	{"pending", "locked", "unlink"},
	{"pending", "pending", "cascade"},
	{"pending", "fired", "fire"},
	{"pending", "idle", "fire"},
	{"fired", "idle", "runFired"},
	{"fired", "idle", "stop"},
	{"fired", "pending", "keepFired"},
	{"fired", "running", "run"},
	{"fired", "locked", "own"},
	{"running", "idle", "stop"},
	{"running", "idle", "run"},
	{"running", "locked", "run"},
	{"running", "locked", "own"},
	{"locked", "pending", "insert"},
}

// statusName names the status of state word s for the table: locked for
// an idle timer with the lock bit.
func statusName(s uint64) string {
	if s&locked != 0 {
		return "locked"
	}
	return [...]string{"idle", "pending", "fired", "running"}[status(s)]
}

// checkMove panics unless the table has the change of a timer's state from
// old to new (see move) made by the function that called move.
func checkMove(old, new uint64, how int) {
	from := statusName(old)
	if how == byCreator {
		from = "new"
	}
	to := statusName(new)
	by := callerName()
	if kind(old) != kind(new) {
		panic(fmt.Sprintf("timingwheel: %s changed a timer's kind", by))
	}
	for _, tr := range transitions {
		if tr.from == from && tr.to == to && tr.by == by {
			return
		}
	}
	panic(fmt.Sprintf("timingwheel: %s moved a timer from %s to %s, which timer.go's table does not allow", by, from, to))
}

// callerNames caches the name of each function that calls move, by
// program counter, so that a debug build allocates no more than another
// once the timers' paths have been taken.
var callerNames struct {
	sync.RWMutex
	m map[uintptr]string
}

// callerName returns the name, without package or receiver, of the
// function that called move.
func callerName() string {
	var pcs [1]uintptr
	if runtime.Callers(4, pcs[:]) == 0 { // Callers, callerName, checkMove, move
		return "?"
	}
	callerNames.RLock()
	by, ok := callerNames.m[pcs[0]]
	callerNames.RUnlock()
	if ok {
		return by
	}
	by = funcName(pcs[0])
	callerNames.Lock()
	if callerNames.m == nil {
		callerNames.m = make(map[uintptr]string)
	}
	callerNames.m[pcs[0]] = by
	callerNames.Unlock()
	return by
}

// funcName returns the name, without package or receiver, of the function
// that pc, a return address Callers gave, is in.
func funcName(pc uintptr) string {
	frame, _ := runtime.CallersFrames([]uintptr{pc}).Next()
	return frame.Function[strings.LastIndexByte(frame.Function, '.')+1:]
}
