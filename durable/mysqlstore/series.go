package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// Series of durable.Queue.Schedule: one row each in the series table,
// keyed by queue and name. A step (AdvanceSeries) is one transaction that
// locks the series' row (or creates it), compares, cancels, enqueues and
// writes the new state; a concurrent step of another process waits for
// the lock and then finds the state moved on.

const (
	// seriesLockSQL reads the series and locks its row. queue, name
	seriesLockSQL = `SELECT fingerprint, last_ns, next_ns, pending FROM {SER} WHERE queue = ? AND name = ? FOR UPDATE`
	// seriesGetSQL reads the series. queue, name
	seriesGetSQL = `SELECT fingerprint, last_ns, next_ns, pending FROM {SER} WHERE queue = ? AND name = ?`
	// seriesCreateSQL creates the series unless it exists: a concurrent
	// creation waits for the other transaction, and then creates nothing.
	seriesCreateSQL = `INSERT IGNORE INTO {SER} (queue, name, fingerprint, last_ns, next_ns, pending) VALUES (?, ?, ?, ?, ?, ?)`
	// seriesUpdateSQL writes the state of a series whose row the
	// transaction locked. fingerprint, last, next, pending, queue, name
	seriesUpdateSQL = `UPDATE {SER} SET fingerprint = ?, last_ns = ?, next_ns = ?, pending = ? WHERE queue = ? AND name = ?`
	// seriesListSQL reads every series of the queue, by name (bytewise).
	seriesListSQL = `SELECT name, fingerprint, last_ns, next_ns, pending FROM {SER} WHERE queue = ? ORDER BY name`
	// seriesDeleteSQL deletes a series. queue, name
	seriesDeleteSQL = `DELETE FROM {SER} WHERE queue = ? AND name = ?`
)

// AdvanceSeries implements store.SeriesKeeper: one transaction, which
// locks the series' row (or creates it), so that of two processes
// stepping from the same state exactly one writes.
func (s *Store) AdvanceSeries(ctx context.Context, p store.SeriesStep) (cur store.Series, done bool, err error) {
	if p.Message.ID != "" {
		if err := p.Message.Validate(); err != nil {
			return store.Series{}, false, err
		}
	}
	err = s.write(ctx, "advancing a series", func(ctx context.Context) error {
		return s.inTx(ctx, func(tx *sql.Tx) (err error) {
			cur, done, err = s.advance(ctx, tx, p)
			return err
		})
	})
	if err != nil {
		return store.Series{}, false, err
	}
	if done && p.Message.ID != "" {
		s.wake.local()
	}
	return cur, done, nil
}

// advance is the transaction of AdvanceSeries.
func (s *Store) advance(ctx context.Context, tx *sql.Tx, p store.SeriesStep) (store.Series, bool, error) {
	name := []byte(p.Name)
	old, found, err := scanSeries(p.Name, tx.QueryRowContext(ctx, expand(seriesLockSQL), s.queue, name))
	if err != nil {
		return store.Series{}, false, err
	}
	creating := p.ExpectLast.IsZero() && p.ExpectFingerprint == ""
	switch {
	case found && (store.SeriesNanos(old.Last) != store.SeriesNanos(p.ExpectLast) || old.Fingerprint != p.ExpectFingerprint):
		return old, false, nil
	case !found && !creating:
		return store.Series{}, false, nil
	}
	pending := old.Pending
	if p.Message.ID != "" {
		pending = p.Message.ID
	}
	if found {
		_, err = tx.ExecContext(ctx, expand(seriesUpdateSQL), []byte(p.Fingerprint), store.SeriesNanos(p.Last),
			store.SeriesNanos(p.Next), []byte(pending), s.queue, name)
	} else {
		var r sql.Result
		r, err = tx.ExecContext(ctx, expand(seriesCreateSQL), s.queue, name, []byte(p.Fingerprint),
			store.SeriesNanos(p.Last), store.SeriesNanos(p.Next), []byte(pending))
		if err == nil {
			if n, _ := r.RowsAffected(); n == 0 {
				// Created meanwhile by another process: it won.
				cur, _, err := scanSeries(p.Name, tx.QueryRowContext(ctx, expand(seriesGetSQL), s.queue, name))
				return cur, false, err
			}
		}
	}
	if err != nil {
		return store.Series{}, false, err
	}
	if p.Cancel != "" {
		if _, _, err := s.cancel(ctx, tx, p.Cancel); err != nil {
			return store.Series{}, false, err
		}
	}
	if p.Message.ID != "" {
		if err := s.enqueue(ctx, tx, []store.Message{p.Message}, nil); err != nil {
			return store.Series{}, false, err
		}
	}
	return store.Series{Name: p.Name, Fingerprint: p.Fingerprint, Last: p.Last, Next: p.Next, Pending: pending}, true, nil
}

// scanSeries scans a row of seriesLockSQL or seriesGetSQL; it reports
// false if there was none.
func scanSeries(name string, row *sql.Row) (store.Series, bool, error) {
	var (
		fingerprint, pending []byte
		last, next           int64
	)
	err := row.Scan(&fingerprint, &last, &next, &pending)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Series{}, false, nil
	}
	if err != nil {
		return store.Series{}, false, err
	}
	return store.Series{Name: name, Fingerprint: string(fingerprint), Last: store.SeriesTime(last),
		Next: store.SeriesTime(next), Pending: string(pending)}, true, nil
}

// Series implements store.SeriesKeeper: one statement.
func (s *Store) Series(ctx context.Context, name string) (store.Series, error) {
	if err := s.check(ctx, "reading a series"); err != nil {
		return store.Series{}, err
	}
	sr, found, err := scanSeries(name, s.db.QueryRowContext(ctx, expand(seriesGetSQL), s.queue, []byte(name)))
	if err != nil {
		return store.Series{}, wrap("reading a series", err)
	}
	if !found {
		return store.Series{}, fmt.Errorf("%w: no series %q", store.ErrNotFound, name)
	}
	return sr, nil
}

// ListSeries implements store.SeriesKeeper: one statement.
func (s *Store) ListSeries(ctx context.Context) ([]store.Series, error) {
	if err := s.check(ctx, "listing series"); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, expand(seriesListSQL), s.queue)
	if err != nil {
		return nil, wrap("listing series", err)
	}
	defer rows.Close()
	var out []store.Series
	for rows.Next() {
		var (
			name, fingerprint, pending []byte
			last, next                 int64
		)
		if err := rows.Scan(&name, &fingerprint, &last, &next, &pending); err != nil {
			return nil, wrap("listing series", err)
		}
		out = append(out, store.Series{Name: string(name), Fingerprint: string(fingerprint),
			Last: store.SeriesTime(last), Next: store.SeriesTime(next), Pending: string(pending)})
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("listing series", err)
	}
	return out, nil
}

// DeleteSeries implements store.SeriesKeeper: one transaction, which
// deletes the series and cancels its pending message (unless it is in
// flight and handed out).
func (s *Store) DeleteSeries(ctx context.Context, name string) (bool, error) {
	var found bool
	err := s.write(ctx, "deleting a series", func(ctx context.Context) error {
		return s.inTx(ctx, func(tx *sql.Tx) error {
			sr, ok, err := scanSeries(name, tx.QueryRowContext(ctx, expand(seriesLockSQL), s.queue, []byte(name)))
			if err != nil || !ok {
				found = false
				return err
			}
			if _, err := tx.ExecContext(ctx, expand(seriesDeleteSQL), s.queue, []byte(name)); err != nil {
				return err
			}
			if sr.Pending != "" {
				if _, _, err := s.cancel(ctx, tx, sr.Pending); err != nil {
					return err
				}
			}
			found = true
			return nil
		})
	})
	return found, err
}
