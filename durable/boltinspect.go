package durable

import (
	"context"
	"fmt"
)

// Get implements Store.
func (s *BoltStore) Get(ctx context.Context, id string) (info Info, err error) {
	if err := ctx.Err(); err != nil {
		return Info{}, err
	}
	err = s.viewTxn(func(t *txn) error {
		r, err := t.get(id)
		switch {
		case err != nil:
			return err
		case r == nil:
			return fmt.Errorf("%w: %q", ErrNotFound, id)
		}
		info = r.info(id)
		return nil
	})
	return info, err
}

// List implements Store. A page is one read transaction, which walks the
// state's index from the cursor: its cost grows with limit, not with the
// number of messages.
func (s *BoltStore) List(ctx context.Context, st State, cursor string, limit int) (infos []Info, next string, err error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	ms, ok := boltState(st)
	if !ok {
		return nil, "", fmt.Errorf("durable: List of an invalid state %v", st)
	}
	var after []byte
	if cursor != "" {
		k, err := parseCursorKey(st, cursor)
		if err != nil {
			return nil, "", err
		}
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
			next = cursorOf(st, indexKey(k))
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

// info is what Get and List tell of the record r of id.
func (r *record) info(id string) Info {
	info := Info{ID: id, Payload: r.payload, Attempt: int(r.attempt), LastError: r.lastError}
	if r.enqueuedAt != 0 {
		info.EnqueuedAt = fromUnixNano(r.enqueuedAt)
	}
	switch r.state {
	case statePending:
		info.State, info.Due = Pending, fromUnixNano(r.due)
	case stateInflight:
		info.State, info.Deadline = InFlight, fromUnixNano(r.key.at())
	case stateDead:
		info.State, info.DiedAt = Dead, fromUnixNano(r.key.at())
	}
	return info
}

func boltState(s State) (msgState, bool) {
	switch s {
	case Pending:
		return statePending, true
	case InFlight:
		return stateInflight, true
	case Dead:
		return stateDead, true
	}
	return 0, false
}
