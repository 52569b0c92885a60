package main

import (
	"fmt"
	"io"
)

// writeLatenessNote writes, under the table of a -quick run that measured
// the wheel's lateness (fire or queue), two lines on what its lateness
// rows are made of. Until the engine fires closer to the deadline, the
// wheel's figures there are mostly these two effects; this is the one
// place to change or remove when that changes.
func writeLatenessNote(w io.Writer, o *options) error {
	if !o.has("fire") && !o.has("queue") {
		return nil
	}
	_, err := fmt.Fprintf(w, "lateness (ours): the wheel fires a level-0 timer (one due within %d ticks) at the end of its %v tick, up to a tick late,\n"+
		"and its driver sleeps on a runtime timer, which on Linux wakes an idle process up to about 1ms late, as in the runtime column.\n",
		o.wheelSize, o.tick)
	return err
}
