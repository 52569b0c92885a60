package main

import (
	"context"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// pgMeter counts the SQL statements that the pools it traces send to
// PostgreSQL: each Exec, Query and QueryRow (BEGIN and COMMIT included,
// which pgx sends as statements), each query of a batch and each COPY. It
// is a pgx tracer (pgx.ConnConfig.Tracer), so it sees this process's
// statements only, whatever else uses the server, and between start and
// stop it counts all of them: those of background work (a River leader's
// maintenance, our safety poll) too.
type pgMeter struct {
	n      atomic.Int64
	before int64
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

// start notes the statements counted so far.
func (m *pgMeter) start(context.Context) error {
	m.before = m.n.Load()
	return nil
}

// stop returns the statements counted since start, less own: statements
// that the caller sent itself to watch the work, not part of it.
func (m *pgMeter) stop(_ context.Context, own int64) (int64, error) {
	return m.n.Load() - m.before - own, nil
}
