package boltstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/seed64e23a5c/timingwheel/durable/store"
	bolt "go.etcd.io/bbolt"
)

// The series of Queue.Schedule in the file: bucketSeries maps a series'
// name to the JSON of a boltSeries. A step is one write transaction.

// boltSeries is a Series as the file keeps it, its times in Unix
// nanoseconds.
type boltSeries struct {
	Fingerprint string `json:"fp"`
	Last        int64  `json:"last"`
	Next        int64  `json:"next"`
	Pending     string `json:"pending,omitempty"`
}

func seriesBucket(tx *bolt.Tx) (*bolt.Bucket, error) {
	b := tx.Bucket(bucketSeries)
	if b == nil {
		return nil, fmt.Errorf("%w: the series bucket is missing", ErrCorrupt)
	}
	return b, nil
}

// getSeries reads the series name from b; ok is false if there is none.
func getSeries(b *bolt.Bucket, name string) (sr store.Series, ok bool, err error) {
	v := b.Get([]byte(name))
	if v == nil {
		return store.Series{}, false, nil
	}
	sr, err = decodeSeries(name, v)
	return sr, err == nil, err
}

func decodeSeries(name string, v []byte) (store.Series, error) {
	var bs boltSeries
	if err := json.Unmarshal(v, &bs); err != nil {
		return store.Series{}, fmt.Errorf("%w: series %q: %v", ErrCorrupt, name, err)
	}
	return store.Series{Name: name, Fingerprint: bs.Fingerprint, Last: store.SeriesTime(bs.Last),
		Next: store.SeriesTime(bs.Next), Pending: bs.Pending}, nil
}

// AdvanceSeries implements Store: the check, the cancel, the message and
// the state in one transaction.
func (s *Store) AdvanceSeries(ctx context.Context, p store.SeriesStep) (cur store.Series, done bool, err error) {
	if p.Message.ID != "" {
		if err := p.Message.Validate(); err != nil {
			return store.Series{}, false, err
		}
	}
	err = s.writeTxn(ctx, func(t *txn) (bool, error) {
		cur, done = store.Series{}, false // fn may run twice (see runBatch)
		b, err := seriesBucket(t.tx)
		if err != nil {
			return false, err
		}
		old, _, err := getSeries(b, p.Name)
		if err != nil {
			return false, err
		}
		if store.SeriesNanos(old.Last) != store.SeriesNanos(p.ExpectLast) || old.Fingerprint != p.ExpectFingerprint {
			cur = old
			return false, nil
		}
		if p.Cancel != "" {
			if _, err := s.cancelIn(t, p.Cancel); err != nil && !errors.Is(err, store.ErrInFlight) {
				return false, err
			}
		}
		next := store.Series{Name: p.Name, Fingerprint: p.Fingerprint, Last: p.Last, Next: p.Next, Pending: old.Pending}
		if p.Message.ID != "" {
			if err := s.enqueueIn(t, s.now(), p.Message); err != nil {
				return false, err
			}
			next.Pending = p.Message.ID
		}
		v, err := json.Marshal(boltSeries{Fingerprint: next.Fingerprint, Last: store.SeriesNanos(next.Last),
			Next: store.SeriesNanos(next.Next), Pending: next.Pending})
		if err != nil {
			return false, err
		}
		if err := b.Put([]byte(p.Name), v); err != nil {
			return false, err
		}
		cur, done = next, true
		return true, nil
	})
	if err != nil {
		return store.Series{}, false, err
	}
	return cur, done, nil
}

// Series implements Store. A file of a version before series (opened
// read-only, see twq) has no series bucket, and no series.
func (s *Store) Series(ctx context.Context, name string) (sr store.Series, err error) {
	err = s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSeries)
		if b == nil {
			return fmt.Errorf("%w: no series %q", store.ErrNotFound, name)
		}
		var ok bool
		sr, ok, err = getSeries(b, name)
		if err == nil && !ok {
			err = fmt.Errorf("%w: no series %q", store.ErrNotFound, name)
		}
		return err
	})
	return sr, err
}

// ListSeries implements Store: bbolt keeps the keys in bytewise order.
func (s *Store) ListSeries(ctx context.Context) (out []store.Series, err error) {
	err = s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSeries)
		if b == nil {
			return nil // a file of a version before series
		}
		return b.ForEach(func(k, v []byte) error {
			sr, err := decodeSeries(string(k), v)
			out = append(out, sr)
			return err
		})
	})
	return out, err
}

// DeleteSeries implements Store.
func (s *Store) DeleteSeries(ctx context.Context, name string) (found bool, err error) {
	err = s.writeTxn(ctx, func(t *txn) (bool, error) {
		found = false // fn may run twice (see runBatch)
		b, err := seriesBucket(t.tx)
		if err != nil {
			return false, err
		}
		sr, ok, err := getSeries(b, name)
		if err != nil || !ok {
			return false, err
		}
		if sr.Pending != "" {
			if _, err := s.cancelIn(t, sr.Pending); err != nil && !errors.Is(err, store.ErrInFlight) {
				return false, err
			}
		}
		found = true
		return true, b.Delete([]byte(name))
	})
	return found, err
}
