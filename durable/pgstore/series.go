package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// Series of durable.Queue.Schedule: one row each in the series table of
// the schema, keyed by queue and name. A step (AdvanceSeries) is one
// transaction that locks the series' row, compares, cancels, enqueues and
// writes the new state; a concurrent step of another process waits for
// the lock and then finds the state moved on.

// seriesLockSQL reads the series $2 of the queue $1 and locks its row
// until the transaction ends.
const seriesLockSQL = `SELECT fingerprint, last_ns, next_ns, pending FROM {SER}
WHERE queue = $1::text AND name = $2::bytea FOR UPDATE`

// seriesCreateSQL creates the series $2 unless it exists; it returns a
// row if it did. A concurrent creation waits for the other transaction,
// and then creates nothing.
//
//	$1 queue, $2 name, $3 fingerprint, $4 last, $5 next, $6 pending
const seriesCreateSQL = `INSERT INTO {SER} (queue, name, fingerprint, last_ns, next_ns, pending)
VALUES ($1::text, $2::bytea, $3::bytea, $4::bigint, $5::bigint, $6::bytea)
ON CONFLICT (queue, name) DO NOTHING RETURNING 1`

// seriesUpdateSQL writes the state of the series $2, whose row the
// transaction locked.
const seriesUpdateSQL = `UPDATE {SER} SET fingerprint = $3::bytea, last_ns = $4::bigint, next_ns = $5::bigint, pending = $6::bytea
WHERE queue = $1::text AND name = $2::bytea`

// seriesGetSQL reads the series $2 of the queue $1.
const seriesGetSQL = `SELECT fingerprint, last_ns, next_ns, pending FROM {SER}
WHERE queue = $1::text AND name = $2::bytea`

// seriesListSQL reads every series of the queue $1, by name (bytea
// compares bytewise).
const seriesListSQL = `SELECT name, fingerprint, last_ns, next_ns, pending FROM {SER}
WHERE queue = $1::text ORDER BY name`

// seriesDeleteSQL deletes the series $2 and cancels its pending message
// as cancelSQL does (unless it is in flight and handed out), in one
// statement; it returns whether there was a series. c names the message
// as one value, not a join with d, so that the planner finds it by the
// whole primary key, not by a scan of the queue.
const seriesDeleteSQL = `WITH d AS (
	DELETE FROM {SER} WHERE queue = $1::text AND name = $2::bytea RETURNING pending
),
c AS (
	DELETE FROM {T} t WHERE t.queue = $1::text AND t.id = (SELECT d.pending FROM d) AND (t.state <> 2 OR t.held)
	RETURNING 1
)
SELECT (SELECT count(*) FROM d) > 0, (SELECT count(*) FROM c)`

// AdvanceSeries implements store.Store: one transaction, which locks the
// series' row (or creates it), so that of two processes stepping from the
// same state exactly one writes.
func (s *Store) AdvanceSeries(ctx context.Context, p store.SeriesStep) (cur store.Series, done bool, err error) {
	if err := s.check(); err != nil {
		return store.Series{}, false, err
	}
	var msg *enqueueBatch // one message: one statement
	if p.Message.ID != "" {
		if msg, err = newEnqueueBatch([]store.Message{p.Message}); err != nil {
			return store.Series{}, false, err
		}
	}
	name := []byte(p.Name)
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		cur, done = store.Series{}, false
		old, found, err := s.lockSeries(ctx, tx, p.Name)
		if err != nil {
			return err
		}
		creating := p.ExpectLast.IsZero() && p.ExpectFingerprint == ""
		switch {
		case found && (store.SeriesNanos(old.Last) != store.SeriesNanos(p.ExpectLast) || old.Fingerprint != p.ExpectFingerprint):
			cur = old
			return nil
		case !found && !creating:
			return nil
		}
		pending := old.Pending
		if p.Message.ID != "" {
			pending = p.Message.ID
		}
		if !found {
			var one int
			err := tx.QueryRow(ctx, s.sql.seriesCreate, s.queue, name, []byte(p.Fingerprint),
				store.SeriesNanos(p.Last), store.SeriesNanos(p.Next), []byte(pending)).Scan(&one)
			if errors.Is(err, pgx.ErrNoRows) {
				// Created meanwhile by another process: it won.
				cur, _, err = s.readSeries(ctx, tx, p.Name)
				return err
			}
			if err != nil {
				return err
			}
		}
		if p.Cancel != "" {
			var deleted, exists bool
			if err := tx.QueryRow(ctx, s.sql.cancel, s.queue, []byte(p.Cancel)).Scan(&deleted, &exists); err != nil {
				return err
			}
		}
		if msg != nil {
			if err := s.enqueue(ctx, tx, msg); err != nil {
				return err
			}
		}
		if found {
			if _, err := tx.Exec(ctx, s.sql.seriesUpdate, s.queue, name, []byte(p.Fingerprint),
				store.SeriesNanos(p.Last), store.SeriesNanos(p.Next), []byte(pending)); err != nil {
				return err
			}
		}
		cur = store.Series{Name: p.Name, Fingerprint: p.Fingerprint, Last: p.Last, Next: p.Next, Pending: pending}
		done = true
		return nil
	})
	if err != nil {
		return store.Series{}, false, wrap("advancing a series", err)
	}
	return cur, done, nil
}

// lockSeries reads the series name and locks its row, if there is one.
func (s *Store) lockSeries(ctx context.Context, tx pgx.Tx, name string) (store.Series, bool, error) {
	return scanSeries(name, tx.QueryRow(ctx, s.sql.seriesLock, s.queue, []byte(name)))
}

func (s *Store) readSeries(ctx context.Context, q querier, name string) (store.Series, bool, error) {
	return scanSeries(name, q.QueryRow(ctx, s.sql.seriesGet, s.queue, []byte(name)))
}

// scanSeries scans a row of seriesLockSQL or seriesGetSQL; it reports
// false if there was none.
func scanSeries(name string, row pgx.Row) (store.Series, bool, error) {
	var (
		fingerprint, pending []byte
		last, next           int64
	)
	err := row.Scan(&fingerprint, &last, &next, &pending)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Series{}, false, nil
	}
	if err != nil {
		return store.Series{}, false, err
	}
	return store.Series{Name: name, Fingerprint: string(fingerprint), Last: store.SeriesTime(last),
		Next: store.SeriesTime(next), Pending: string(pending)}, true, nil
}

// Series implements store.Store: one statement.
func (s *Store) Series(ctx context.Context, name string) (store.Series, error) {
	if err := s.check(); err != nil {
		return store.Series{}, err
	}
	sr, found, err := s.readSeries(ctx, s.pool, name)
	if err != nil {
		return store.Series{}, wrap("reading a series", err)
	}
	if !found {
		return store.Series{}, fmt.Errorf("%w: no series %q", store.ErrNotFound, name)
	}
	return sr, nil
}

// ListSeries implements store.Store: one statement.
func (s *Store) ListSeries(ctx context.Context) ([]store.Series, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, s.sql.seriesList, s.queue)
	if err != nil {
		return nil, wrap("listing series", err)
	}
	var out []store.Series
	for rows.Next() {
		var (
			name, fingerprint, pending []byte
			last, next                 int64
		)
		if err := rows.Scan(&name, &fingerprint, &last, &next, &pending); err != nil {
			rows.Close()
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

// DeleteSeries implements store.Store: one statement deletes the series
// and cancels its pending message.
func (s *Store) DeleteSeries(ctx context.Context, name string) (bool, error) {
	if err := s.check(); err != nil {
		return false, err
	}
	var found bool
	var cancelled int64
	if err := s.pool.QueryRow(ctx, s.sql.seriesDelete, s.queue, []byte(name)).Scan(&found, &cancelled); err != nil {
		return false, wrap("deleting a series", err)
	}
	return found, nil
}
