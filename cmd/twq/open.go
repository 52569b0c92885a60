package main

import (
	"context"
	"errors"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// A handle is an open queue's store, and how to let go of it.
type handle struct {
	store durable.Store
	close func()
}

// Errors of opening a queue, wrapped by the errors twq reports.
var (
	// errNoQueue: the file does not exist, or Redis has no such queue.
	errNoQueue = errors.New("no such queue")
	// errHeld: another process holds the queue file.
	errHeld = errors.New("the queue file is held by another process (a running service?)")
	// errNotQueue: the file is not a queue file, or is damaged.
	errNotQueue = errors.New("not a queue file, or a damaged one")
	// errUnreachable: Redis does not answer.
	errUnreachable = errors.New("cannot reach Redis")
)

// open opens the target's queue. For a read-only command it writes
// nothing: on a file it reads a private snapshot; on Redis it makes none
// of the writes of redisstore.New. It never creates a queue: the file or
// the Redis queue must exist.
func open(ctx context.Context, t target, o options, readOnly bool) (*handle, error) {
	switch {
	case t.onRedis():
		return openRedis(ctx, t, o, readOnly)
	case readOnly:
		return openFileSnapshot(t.path, o.timeout)
	default:
		return openFile(t.path, o.timeout)
	}
}
