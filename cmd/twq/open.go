package main

import (
	"context"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// A handle is an open queue's store, and how to let go of it.
type handle struct {
	store durable.Store
	close func()
}

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
