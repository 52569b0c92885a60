package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// genericPlanSQL, sent before a statement in the same implicit
// transaction (one pgx batch, one round trip), makes PostgreSQL run the
// statement with the plan it keeps for the prepared statement rather than
// plan it for each call's arguments; the setting ends with the
// transaction. Left to itself, PostgreSQL compares the kept plan's
// estimate with those of the first calls' own plans, and plans every
// claim anew for good: the kept plan assumes that LIMIT $2 takes a
// tenth of the queue. Planning a claim costs about as much as running
// it. The plan tests check the kept plan (force_generic_plan).
//
// The statement of acks and confirmations is not sent this way: most
// connections keep its generic plan by themselves, and the setting's
// statement cost about what the plans saved (twbench river).
const genericPlanSQL = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true)`

// queryGeneric runs sql with args after genericPlanSQL, in one batch,
// and has read read its rows. It returns read's error, or else the
// batch's, where the statement's commit is reported: what read got is
// valid only if that is nil.
//
// Only a pool that prepares and keeps its statements (pgx's default,
// QueryExecModeCacheStatement) keeps plans: in pgx's other modes each
// statement is planned anyway, and sql is sent alone.
func (s *Store) queryGeneric(ctx context.Context, sql string, args []any, read func(pgx.Rows) error) error {
	if !s.keepsPlans {
		rows, err := s.pool.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		return readRows(rows, read)
	}
	var b pgx.Batch
	b.Queue(genericPlanSQL)
	b.Queue(sql, args...)
	br := s.pool.SendBatch(ctx, &b)
	err := readGeneric(br, read)
	if closeErr := br.Close(); err == nil {
		err = closeErr
	}
	return err
}

// readGeneric reads the results of queryGeneric's batch.
func readGeneric(br pgx.BatchResults, read func(pgx.Rows) error) error {
	if _, err := br.Exec(); err != nil {
		return err
	}
	rows, err := br.Query()
	if err != nil {
		return err
	}
	return readRows(rows, read)
}

// readRows has read read rows, and closes them.
func readRows(rows pgx.Rows, read func(pgx.Rows) error) error {
	defer rows.Close()
	if err := read(rows); err != nil {
		return err
	}
	rows.Close()
	return rows.Err()
}
