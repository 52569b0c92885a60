package durable

import (
	"context"
	"fmt"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// Reading what the queue holds: Get, List, DeadLetters and Stats.

// Get returns what the queue holds under id, or an error wrapping
// ErrNotFound.
func (q *Queue) Get(ctx context.Context, id string) (Info, error) {
	var info Info
	err := q.call(func() (err error) {
		info, err = q.store.Get(ctx, id)
		return err
	})
	return info, err
}

// List returns up to limit messages in state s, in order (pending by due
// time; in flight by lease deadline; dead by time of death), starting
// after cursor ("" for the first page), and the cursor of the next page
// ("" at the end).
//
// Pages are read one at a time, each atomic on its own: a message that
// changes state between two pages may be listed twice or not at all, but
// a message that stays in s is listed exactly once, in order, however
// the others move (see the store's List for what order means with
// shards). A cursor is only for List with the same s: another s, or a
// string List did not return, fails with an error wrapping
// ErrInvalidCursor. It returns an error for a limit below 1 or an
// invalid s.
func (q *Queue) List(ctx context.Context, s State, cursor string, limit int) ([]Info, string, error) {
	switch {
	case !s.Valid():
		return nil, "", fmt.Errorf("durable: List of an invalid state %v", s)
	case limit < 1:
		return nil, "", fmt.Errorf("durable: List limit must be positive, got %d", limit)
	}
	var (
		infos []Info
		next  string
	)
	err := q.call(func() (err error) {
		infos, next, err = q.store.List(ctx, store.ListParams{State: s, Cursor: cursor, Limit: limit})
		return err
	})
	return infos, next, err
}

// DeadLetters returns up to limit dead messages, in the order they died;
// the Due of each is when it died. List(ctx, Dead, cursor, limit) pages
// through the same, with DiedAt, Attempt, LastError and EnqueuedAt.
//
// Deprecated: use List with Dead, whose Info gives each time a field of
// its own (DiedAt) rather than reusing Message.Due.
func (q *Queue) DeadLetters(ctx context.Context, limit int) ([]Message, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("durable: DeadLetters limit must be positive, got %d", limit)
	}
	infos, _, err := q.List(ctx, Dead, "", limit)
	if err != nil {
		return nil, err
	}
	dead := make([]Message, len(infos))
	for i, info := range infos {
		dead[i] = Message{ID: info.ID, Payload: info.Payload, Due: info.DiedAt}
	}
	return dead, nil
}

// Stats counts the messages in the store.
func (q *Queue) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	err := q.call(func() (err error) {
		st, err = q.store.Stats(ctx)
		return err
	})
	return st, err
}
