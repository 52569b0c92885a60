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

// open opens the target's queue for cmd. For a read-only command it
// writes nothing: on a file it reads a private snapshot; on Redis it
// makes none of the writes of redisstore.New; on PostgreSQL its
// connections are read-only; on MySQL it makes only reads. For serve, a file is held
// only while a request or a call of the queue runs (lazyFile). It never
// creates a queue: the file or the Redis queue must exist.
func open(ctx context.Context, t target, o options, cmd *command) (*handle, error) {
	switch {
	case t.onRedis():
		return openRedis(ctx, t, o, cmd.readOnly)
	case t.onPostgres():
		return openPostgres(ctx, t, o, cmd.readOnly)
	case t.onMySQL():
		return openMySQL(ctx, t, o)
	case cmd.readOnly:
		return openFileSnapshot(t.path, o.timeout)
	case cmd.lazy:
		return openFileLazy(t.path, o.timeout)
	default:
		return openFile(t.path, o.timeout)
	}
}
