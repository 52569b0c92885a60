package boltstore

import (
	"bytes"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// trimDead deletes the oldest dead letters beyond r.MaxCount (0: no
// limit) and those that died before now-r.MaxAge (0: no limit), up to
// store.MaxTrim. It reports whether it deleted any.
func (t *txn) trimDead(now int64, r store.Retention) (bool, error) {
	maxCount, maxAge := r.MaxCount, r.MaxAge
	over := 0
	if maxCount > 0 {
		over = t.counter(stateDead) - maxCount
	}
	cutoff := int64(-1 << 63)
	if maxAge > 0 {
		cutoff = addDuration(now, -maxAge)
	}
	var keys, ids [][]byte
	c := t.dead.Cursor()
	for k, v := c.First(); k != nil && len(keys) < store.MaxTrim; k, v = c.Next() {
		if len(keys) >= over && (len(k) != len(indexKey{}) || indexKey(k).at() >= cutoff) {
			break
		}
		keys = append(keys, bytes.Clone(k))
		ids = append(ids, bytes.Clone(v))
	}
	for i, k := range keys {
		if err := t.dead.Delete(k); err != nil {
			return false, err
		}
		if err := t.msgs.Delete(ids[i]); err != nil {
			return false, err
		}
	}
	if len(keys) == 0 {
		return false, nil
	}
	return true, t.count(stateDead, -int64(len(keys)))
}
