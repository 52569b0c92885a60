package main

import (
	"fmt"
	"io"
)

// writeLatenessNote writes, under the table of a -quick run that measured
// the wheel's lateness (fire or queue), two lines on what its lateness
// rows are made of; the one place to change when the engine's firing
// policy changes.
func writeLatenessNote(w io.Writer, o *options) error {
	if !o.has("fire") && !o.has("queue") {
		return nil
	}
	_, err := fmt.Fprintf(w, "lateness (ours): the wheel fires a timer at the end of the quarter of its %v tick its deadline falls in (up to %v late), never before;\n"+
		"its driver wakes on a timerfd (beside it a runtime timer, whichever is first, after a wake-up came late): runtime timers wake an idle process up to about 1ms late (epoll_wait takes whole ms).\n",
		o.tick, o.tick/4)
	return err
}
