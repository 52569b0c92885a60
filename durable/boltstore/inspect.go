package boltstore

import (
	"context"
	"fmt"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, id string) (info store.Info, err error) {
	if err := ctx.Err(); err != nil {
		return store.Info{}, err
	}
	err = s.viewTxn(func(t *txn) error {
		r, err := t.get(id)
		switch {
		case err != nil:
			return err
		case r == nil:
			return fmt.Errorf("%w: %q", store.ErrNotFound, id)
		}
		info = r.info(id)
		return nil
	})
	return info, err
}

// List implements store.Store. A page is one read transaction, which walks the
// state's index from the cursor: its cost grows with limit, not with the
// number of messages.
func (s *Store) List(ctx context.Context, p store.ListParams) (infos []store.Info, next string, err error) {
	st, cursor, limit := p.State, p.Cursor, p.Limit
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	ms, ok := boltState(st)
	if !ok {
		return nil, "", fmt.Errorf("durable: List of an invalid state %v", st)
	}
	var after []byte
	if cursor != "" {
		c, err := store.ParseCursor(st, cursor)
		if err != nil {
			return nil, "", err
		}
		k := makeIndexKey(store.UnixNano(c.At), c.Seq)
		after = k[:]
	}
	err = s.viewTxn(func(t *txn) error {
		c := t.index(ms).Cursor()
		k, id := c.First()
		if after != nil {
			k, id = c.Seek(after)
			if k != nil && string(k) == string(after) {
				k, id = c.Next()
			}
		}
		for ; k != nil && len(infos) < limit; k, id = c.Next() {
			r, err := t.get(string(id))
			if err != nil {
				return err
			}
			if r == nil || r.state != ms || string(r.key[:]) != string(k) {
				return fmt.Errorf("%w: %v index names %q, which is not there", ErrCorrupt, st, id)
			}
			infos = append(infos, r.info(string(id)))
			next = store.Cursor{State: st, At: fromUnixNano(indexKey(k).at()), Seq: indexKey(k).seq()}.String()
		}
		if k == nil {
			next = ""
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return infos, next, nil
}

// message is the message of the record r of id, as a Lease carries it.
func (r *record) message(id string) store.Message {
	return store.Message{ID: id, Kind: r.kind, Payload: r.payload, Due: fromUnixNano(r.due),
		MaxAttempts: int(r.maxAttempts), Timeout: r.timeout}
}

// info is what Get and List tell of the record r of id.
func (r *record) info(id string) store.Info {
	info := store.Info{ID: id, Kind: r.kind, Payload: r.payload, MaxAttempts: int(r.maxAttempts), Timeout: r.timeout,
		Attempt: int(r.attempt), LastError: r.lastError}
	if r.enqueuedAt != 0 {
		info.EnqueuedAt = fromUnixNano(r.enqueuedAt)
	}
	switch r.state {
	case statePending:
		info.State, info.Due = store.Pending, fromUnixNano(r.due)
	case stateInflight:
		info.State, info.Deadline = store.InFlight, fromUnixNano(r.key.at())
	case stateDead:
		info.State, info.DiedAt = store.Dead, fromUnixNano(r.key.at())
	}
	return info
}

func boltState(s store.State) (msgState, bool) {
	switch s {
	case store.Pending:
		return statePending, true
	case store.InFlight:
		return stateInflight, true
	case store.Dead:
		return stateDead, true
	}
	return 0, false
}
