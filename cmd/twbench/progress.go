package main

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress makes the progress bars of long phases (preloads, waits for
// timers to fire). They are drawn on stderr only when it is a terminal,
// so piped or captured output stays clean.
type progress struct {
	w       io.Writer
	enabled bool
}

// newProgress returns bars drawn on w when w is a terminal, and no-op
// bars otherwise.
func newProgress(w io.Writer) progress {
	f, ok := w.(*os.File)
	return progress{w: w, enabled: ok && term.IsTerminal(int(f.Fd()))}
}

// bar is one phase's progress. Its methods do nothing when bars are off.
type bar struct {
	pb *progressbar.ProgressBar
}

// start returns a bar for a phase of total steps described by desc.
func (p progress) start(desc string, total int) bar {
	if !p.enabled || total <= 0 {
		return bar{}
	}
	return bar{progressbar.NewOptions64(int64(total),
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionSetWidth(30),
		progressbar.OptionShowCount(),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)}
}

// add advances the bar by n steps.
func (b bar) add(n int) {
	if b.pb != nil {
		_ = b.pb.Add(n)
	}
}

// set moves the bar to n steps done.
func (b bar) set(n int) {
	if b.pb != nil {
		_ = b.pb.Set(n)
	}
}

// finish completes the bar and clears it from the terminal.
func (b bar) finish() {
	if b.pb != nil {
		_ = b.pb.Finish()
	}
}
