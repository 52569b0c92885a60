// Package deliverylog writes the logs of the consumer processes of the
// stores' multi-process tests, one line an event, each with one write, so
// that a process killed with SIGKILL loses nothing it wrote. Its lines:
//
//	D id attempt due received deadline payload   (a delivery; times in Unix ns)
//	A id                                         (its Ack returned nil)
//	L id                                         (its Ack returned ErrLeaseLost)
//	E id error                                   (its Ack failed otherwise; id - for a Receive)
package deliverylog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// A Writer writes the lines of one process's log to w, and keeps the
// first write error.
type Writer struct {
	w    io.Writer
	werr atomic.Pointer[error]
}

// New returns a Writer on w (an *os.File opened for appending).
func New(w io.Writer) *Writer { return &Writer{w: w} }

func (l *Writer) line(format string, args ...any) {
	if _, err := fmt.Fprintf(l.w, format, args...); err != nil {
		l.werr.CompareAndSwap(nil, &err)
	}
}

// Err returns the first write error, if any.
func (l *Writer) Err() error {
	if p := l.werr.Load(); p != nil {
		return *p
	}
	return nil
}

// Delivered writes the D line of d, received now.
func (l *Writer) Delivered(d *durable.Delivery) {
	l.line("D %s %d %d %d %d %s\n", d.ID, d.Attempt, d.Due.UnixNano(), time.Now().UnixNano(), d.Deadline.UnixNano(), d.Payload)
}

// Observer returns an observer that writes the A and L lines of the acks
// that Queue.Run writes.
func (l *Writer) Observer() durable.Observer {
	return durable.ObserverFunc(func(e durable.Event) {
		switch e.Kind {
		case durable.EventAcked:
			l.line("A %s\n", e.ID)
		case durable.EventLeaseLost:
			l.line("L %s\n", e.ID)
		}
	})
}

// ReceiveAndAck receives and acks from n goroutines until ctx ends,
// writing the D line of each delivery and the A, L or E line of its Ack
// (which is not cut short by ctx), and returns the first write error.
func (l *Writer) ReceiveAndAck(ctx context.Context, q *durable.Queue, n int) error {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				d, err := q.Receive(ctx)
				if err != nil {
					if ctx.Err() != nil || errors.Is(err, durable.ErrClosed) {
						return
					}
					l.line("E - %v\n", err)
					continue
				}
				l.Delivered(d)
				switch err := d.Ack(context.WithoutCancel(ctx)); {
				case err == nil:
					l.line("A %s\n", d.ID)
				case errors.Is(err, durable.ErrLeaseLost):
					l.line("L %s\n", d.ID)
				default:
					l.line("E %s %v\n", d.ID, err)
				}
			}
		})
	}
	wg.Wait()
	return l.Err()
}
