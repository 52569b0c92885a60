package boltstore

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/seed64e23a5c/timingwheel/durable/store"
	bolt "go.etcd.io/bbolt"
)

// A writeOp is one call's work in a write transaction. It returns whether
// it changed anything, and an error. An error that wraps errNoChange (such
// as ErrLeaseLost) means the op found its precondition false and wrote
// nothing, so the transaction goes on with the other ops; any other error
// aborts the transaction, and the ops are then run again one transaction
// each, so that one failing op does not fail the others.
type writeOp struct {
	ctx  context.Context
	fn   func(tx *bolt.Tx) (wrote bool, err error)
	done chan error
}

// cleanError reports whether err is an outcome that wrote nothing and
// leaves the transaction usable.
func cleanError(err error) bool {
	return errors.Is(err, store.ErrLeaseLost) || errors.Is(err, store.ErrInFlight) || errors.Is(err, store.ErrNotFound)
}

// maxBatch bounds the ops of one transaction, so that a burst does not
// make one huge transaction whose ops all wait for the slowest.
const maxBatch = 512

// groupCommit runs every write of a BoltStore on one goroutine. Calls that
// arrive while a transaction commits are queued and then run together in
// the next transaction, which ends with one fsync for all of them: the
// more callers, the more each fsync carries, and a lone caller waits for
// nothing but its own fsync. (bbolt's DB.Batch also coalesces, but by
// waiting up to a delay first, which a lone caller would pay every time.)
func (s *Store) groupCommit() {
	defer close(s.writerDone)
	batch := make([]*writeOp, 0, maxBatch)
	for op := range s.ops {
		batch = append(batch[:0], op)
		// The callers of the last commit were just woken, and most call
		// again at once (an ack, then a claim): let them run before the
		// batch is taken, so that they join it rather than the one after.
		// With nobody else to run, this returns at once.
		runtime.Gosched()
	fill:
		for len(batch) < maxBatch {
			select {
			case op, ok := <-s.ops:
				if !ok {
					break fill
				}
				batch = append(batch, op)
			default:
				break fill
			}
		}
		s.runBatch(batch)
	}
}

func (s *Store) runBatch(batch []*writeOp) {
	results := make([]error, len(batch))
	err := s.update(func(tx *bolt.Tx) (bool, error) {
		wrote := false
		for i, op := range batch {
			if err := op.ctx.Err(); err != nil {
				results[i] = err
				continue
			}
			w, err := op.fn(tx)
			if err != nil && !cleanError(err) {
				return false, err
			}
			wrote = wrote || w
			results[i] = err
		}
		return wrote, nil
	})
	if err != nil && len(batch) > 1 && !errors.Is(err, ErrCorrupt) {
		// Find the culprit: each op alone.
		for _, op := range batch {
			s.runBatch([]*writeOp{op})
		}
		return
	}
	for i, op := range batch {
		if err != nil {
			op.done <- err
		} else {
			op.done <- results[i]
		}
	}
}

// update runs fn in a write transaction, which it commits if fn wrote
// something and rolls back otherwise (a transaction that wrote nothing
// needs no fsync). A panic in bbolt, which reads a damaged file that way,
// is returned as ErrCorrupt.
func (s *Store) update(fn func(tx *bolt.Tx) (bool, error)) (err error) {
	defer recoverCorrupt(&err)
	tx, err := s.db.Begin(true)
	if err != nil {
		return err
	}
	finished := false
	defer func() {
		if !finished { // fn failed or panicked: give the lock back
			defer func() { _ = recover() }()
			_ = tx.Rollback()
		}
	}()
	wrote, err := fn(tx)
	if err != nil {
		return err
	}
	if !wrote {
		finished = true
		return tx.Rollback()
	}
	err = tx.Commit() // on failure, Commit rolls back itself
	finished = true
	s.commits.Add(1)
	if err != nil {
		return fmt.Errorf("durable: commit: %w", err)
	}
	return nil
}

// write hands fn to the group commit and waits for its outcome. Once
// handed over, the op runs to its end even if ctx ends meanwhile, so that
// the error returned always says whether it happened.
func (s *Store) write(ctx context.Context, fn func(tx *bolt.Tx) (bool, error)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	op := &writeOp{ctx: ctx, fn: fn, done: make(chan error, 1)}
	s.closeMu.RLock()
	if s.closed {
		s.closeMu.RUnlock()
		return store.ErrClosed
	}
	s.ops <- op
	s.closeMu.RUnlock()
	return <-op.done
}

// view runs fn in a read transaction, turning a bbolt panic into
// ErrCorrupt.
func (s *Store) view(fn func(tx *bolt.Tx) error) (err error) {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return store.ErrClosed
	}
	defer recoverCorrupt(&err)
	return s.db.View(fn)
}

func recoverCorrupt(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%w: %v", ErrCorrupt, r)
	}
}
