package timingwheel

import (
	"context"
	"sync"
	"sync/atomic"
)

// Waiting for the tasks under way: every fired timer's task handed to the
// executor (or to its own goroutine) counts in w.underway from the
// hand-over until the task returns. Once the wheel is stopped no task is
// handed over any more (but the one being handed over as Stop is called,
// counted already), so the count only falls, and the first to see it at
// zero closes idle.
type underway struct {
	n        atomic.Int64
	idleOnce sync.Once
	idle     chan struct{} // closed once the wheel is stopped and no task is under way
}

// handingOver counts a task about to be handed to the executor.
func (w *TimingWheel) handingOver() { w.underway.n.Add(1) }

// taskDone counts a task that returned.
func (w *TimingWheel) taskDone() {
	if w.underway.n.Add(-1) == 0 && w.stopped.Load() {
		w.underway.closeIdle()
	}
}

func (c *underway) closeIdle() { c.idleOnce.Do(func() { close(c.idle) }) }

// Shutdown stops the wheel, as Stop does, then waits until every task
// handed to the executor has returned, or ctx ends, in which case it
// returns ctx's error (the tasks go on). A task handed to an executor that
// never runs it is waited for until ctx ends. Shutdown must not be called
// from a task of the wheel, which would wait for itself: call Stop there.
func (w *TimingWheel) Shutdown(ctx context.Context) error {
	w.Stop()
	if w.underway.n.Load() == 0 {
		w.underway.closeIdle()
	}
	select {
	case <-w.underway.idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
