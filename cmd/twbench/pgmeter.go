package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgMeter counts the SQL statements that the pools it traces send to
// PostgreSQL: each Exec, Query and QueryRow (BEGIN and COMMIT included,
// which pgx sends as statements), each query of a batch and each COPY. It
// is a pgx tracer (pgx.ConnConfig.Tracer), so it sees this process's
// statements only, whatever else uses the server, and between start and
// stop it counts all of them: those of background work (a River leader's
// maintenance, our safety poll) too.
//
// With a dsn, it also reads the server's own counters at start and stop,
// over a connection of its own: the commits of every database
// (pg_stat_database.xact_commit) and the WAL's syncs to disk
// (pg_stat_wal.wal_sync, the fsyncs of commits, which group commit
// shares), so that the figures say how many commits and fsyncs a message
// cost, whoever made them (a River leader's maintenance and our safety
// polls too).
type pgMeter struct {
	n      atomic.Int64
	before int64

	dsn            string
	server, served serverCounters // at start; their change from start to stop
}

// serverCounters are the counters a pgMeter reads from the server.
type serverCounters struct{ commits, syncs int64 }

// statsDelay is how long a PostgreSQL backend may keep the counts of its
// transactions before the statistics see them (PGSTAT_MIN_INTERVAL, 1s
// since PostgreSQL 15): the meter waits this long before each reading.
const statsDelay = 1100 * time.Millisecond

// readServer reads the server's counters.
func (m *pgMeter) readServer(ctx context.Context) (serverCounters, error) {
	time.Sleep(statsDelay)
	conn, err := pgx.Connect(ctx, m.dsn)
	if err != nil {
		return serverCounters{}, err
	}
	defer conn.Close(ctx)
	var c serverCounters
	err = conn.QueryRow(ctx, `SELECT (SELECT sum(xact_commit) FROM pg_stat_database)::bigint, (SELECT wal_sync FROM pg_stat_wal)`).
		Scan(&c.commits, &c.syncs)
	if err != nil {
		return serverCounters{}, fmt.Errorf("reading the server's counters: %w", err)
	}
	return c, nil
}

var (
	_ pgx.QueryTracer    = (*pgMeter)(nil)
	_ pgx.BatchTracer    = (*pgMeter)(nil)
	_ pgx.CopyFromTracer = (*pgMeter)(nil)
)

func (m *pgMeter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	m.n.Add(1)
	return ctx
}

func (m *pgMeter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (m *pgMeter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (m *pgMeter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) { m.n.Add(1) }

func (m *pgMeter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (m *pgMeter) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	m.n.Add(1)
	return ctx
}

func (m *pgMeter) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

// start notes the statements counted so far, and the server's counters.
func (m *pgMeter) start(ctx context.Context) error {
	if m.dsn != "" {
		c, err := m.readServer(ctx)
		if err != nil {
			return err
		}
		m.server = c
	}
	m.before = m.n.Load()
	return nil
}

// stop returns the statements counted since start, less own: statements
// that the caller sent itself to watch the work, not part of it; and
// notes how the server's counters changed (see last).
func (m *pgMeter) stop(ctx context.Context, own int64) (int64, error) {
	n := m.n.Load() - m.before - own
	if m.dsn != "" {
		c, err := m.readServer(ctx)
		if err != nil {
			return 0, err
		}
		m.served = serverCounters{commits: c.commits - m.server.commits, syncs: c.syncs - m.server.syncs}
	}
	return n, nil
}

// last returns the server's commits and WAL syncs between the last start
// and stop (zero without a dsn).
func (m *pgMeter) last() serverCounters { return m.served }
