package durable

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"
)

// Handler handles one delivery. Returning nil acks it; returning an error, or panicking, retries it
// with the queue's back-off (or sends it to the dead letters after its last attempt), and the error's
// text is kept with the message (Delivery.RetryWithError): the next attempt's Delivery.LastError and
// Queue.Get's Info.LastError show it, cut to MaxErrorLen bytes. A panic's text is the panic value
// followed by the stack.
type Handler func(ctx context.Context, d *Delivery) error

// ErrInvalidRunner is wrapped by the error Run returns for workers < 1 or
// a nil Handler.
var ErrInvalidRunner = errors.New("durable: invalid runner arguments")

// ErrHandlerPanic is wrapped by the error a panicking handler's attempt
// fails with.
var ErrHandlerPanic = errors.New("durable: handler panicked")

// settleTimeout bounds the Ack or Retry that follows a handler: it is not
// tied to Run's ctx, so that a handler that finished as Run was stopped
// still has its result written.
const settleTimeout = 10 * time.Second

// Run receives messages and calls h for each, with at most workers handlers running at once, until ctx
// ends. While h runs, Run extends the lease so that a handler slower than the visibility timeout is not
// redelivered meanwhile; if the lease is lost anyway (the message was replaced or cancelled), h's ctx is
// cancelled. When ctx ends, Run stops receiving and returns once every running handler has returned.
// It returns ErrClosed on a closed queue and an error for workers < 1 or a nil h.
//
// Each worker receives one message at a time, so no more than workers
// messages are leased by Run at once. The handler's ctx carries ctx's
// values and ends when ctx ends or the lease is lost (context.Cause says
// which: ErrLeaseLost for the latter). Run extends the lease every third
// of the visibility timeout, by the visibility timeout; d.Deadline keeps
// the deadline of the hand-out.
//
// Shutdown: when ctx ends, the running handlers' ctx ends too, and Run
// waits for each of them to return, however long that takes: a handler
// that never returns keeps Run from returning, and its lease goes on being
// extended, so its message is not delivered to anyone else while this
// process lives. If the process exits instead, the lease expires after
// the visibility timeout and the message is delivered again. A handler
// that returns an error after its ctx ended has its attempt retried like
// any other failure; one that returns nil is acked.
//
// Run returns nil when ctx ends, ErrClosed if the queue is closed while
// it runs, and ErrCorrupt if the store is damaged. A store that is down
// does not end it: Receive retries with a back-off.
func (q *Queue) Run(ctx context.Context, workers int, h Handler) error {
	switch {
	case workers < 1:
		return fmt.Errorf("%w: workers is %d, want at least 1", ErrInvalidRunner, workers)
	case h == nil:
		return fmt.Errorf("%w: nil Handler", ErrInvalidRunner)
	}
	if err := q.enter(); err != nil {
		return err
	}
	q.active.Done()

	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := q.work(ctx, h); err != nil {
				errOnce.Do(func() { firstErr = err })
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// work is one worker of Run: it receives and handles messages until ctx
// ends (nil) or Receive fails for good (its error).
func (q *Queue) work(ctx context.Context, h Handler) error {
	for {
		d, err := q.Receive(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		q.handle(ctx, h, d)
	}
}

// handle runs h on d under a lease that is kept alive, then acks d or
// retries it.
func (q *Queue) handle(ctx context.Context, h Handler, d *Delivery) {
	hctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stopKeeping := q.keepLease(hctx, cancel, d)
	started := q.clock.Now()
	err := callHandler(hctx, h, d)
	q.observe(Event{Kind: EventHandled, ID: d.ID, Attempt: d.Attempt, Duration: q.clock.Since(started), Err: err})
	stopKeeping()

	settleCtx, cancelSettle := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancelSettle()
	if err == nil {
		if ackErr := d.Ack(settleCtx); ackErr != nil {
			q.log.Warn("durable: ack after the handler failed", "id", d.ID, "attempt", d.Attempt, "err", ackErr)
		}
		return
	}
	if errors.Is(err, ErrHandlerPanic) {
		q.log.Error("durable: handler panicked", "id", d.ID, "attempt", d.Attempt, "err", err)
	}
	if retryErr := d.RetryWithError(settleCtx, 0, err); retryErr != nil {
		q.log.Warn("durable: retry after the handler failed", "id", d.ID, "attempt", d.Attempt,
			"handler_err", err, "err", retryErr)
	}
}

// callHandler calls h, turning a panic into an error wrapping
// ErrHandlerPanic, with the stack.
func callHandler(ctx context.Context, h Handler, d *Delivery) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w: %v\n%s", ErrHandlerPanic, v, debug.Stack())
		}
	}()
	return h(ctx, d)
}

// keepLease extends d's lease every third of the visibility timeout until
// the returned function is called, and cancels the handler's ctx with
// ErrLeaseLost when an extension finds the lease lost. The returned
// function waits for the extender to stop, so that no Extend runs after
// it (and so races the Ack or Retry that follows).
func (q *Queue) keepLease(hctx context.Context, cancel context.CancelCauseFunc, d *Delivery) (stop func()) {
	visibility := q.cfg.visibility
	stopped := make(chan struct{})
	done := make(chan struct{})
	// The ticker starts before the handler does, so the first extension is
	// due a third of the visibility timeout after the hand-out.
	ticker := q.clock.Ticker(max(visibility/3, time.Millisecond))
	go func() {
		defer close(done)
		defer ticker.Stop()
		for {
			select {
			case <-stopped:
				return
			case <-ticker.C:
			}
			// Extend even after ctx ended: the handler still runs, and its
			// message must not go to anyone else meanwhile.
			extendCtx, cancelExtend := context.WithTimeout(context.WithoutCancel(hctx), visibility/3+time.Second)
			_, err := d.extend(extendCtx, visibility)
			cancelExtend()
			switch {
			case err == nil:
			case errors.Is(err, ErrLeaseLost):
				cancel(ErrLeaseLost)
				return
			case errors.Is(err, ErrClosed):
				return
			default:
				q.log.Warn("durable: extending a running handler's lease failed; trying again", "id", d.ID, "err", err)
			}
		}
	}()
	return func() {
		close(stopped)
		<-done
	}
}
