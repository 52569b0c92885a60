package pgstore

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// A claim reads, to make them in flight, the rows it locked and no
// others, even for a queue that the table's statistics do not know yet
// (the planner then estimates it at one row). Before, the statement's
// update was planned as a scan of every row of the queue for each claim,
// which made draining a backlog of n messages cost O(n²).
//
// Claim runs with the generic plan (see genericPlanSQL); the plan made for
// the arguments is checked too. Each claim is rolled back.
func TestClaimReadsOnlyTheRowsItClaims(t *testing.T) {
	pool, s := unknownQueue(t)
	const backlog, limit = 5000, 100
	enqueueN(t, s, backlog)

	// Half of them held, on a lease of their own.
	p := store.ClaimParams{Limit: limit, Held: limit / 2, Lease: time.Minute, HeldLease: time.Second}
	for _, mode := range []string{"force_generic_plan", "force_custom_plan"} {
		plan := planByMode(t, pool, mode, s.sql.claim, s.claimArgs(p)...)
		update := plan.find("ModifyTable")
		require.NotNil(t, update, "%s: the claim updates the rows it locked", mode)
		read := update.rowsRead("timingwheel_messages")
		assert.Equal(t, float64(limit), read, "%s: rows of the table read to update the %d claimed, of %d pending", mode, limit, backlog)
	}
}

// A claim runs with the plan PostgreSQL keeps for its prepared statement,
// not with one planned anew for each call's arguments, and the setting
// that makes it so ends with the claim.
func TestClaimRunsWithItsGenericPlan(t *testing.T) {
	testPool(t) // skips without PostgreSQL
	cfg, err := pgxpool.ParseConfig(server.ConnString() + " pool_max_conns=1")
	require.NoError(t, err)
	pool, err := pgxpool.NewWithConfig(ctx, cfg) // one connection: the claims' and the checks'
	require.NoError(t, err)
	defer pool.Close()
	s := openStore(t, pool, freshQueue())
	enqueueN(t, s, 20)

	const claims = 10
	for range claims {
		c, err := s.Claim(ctx, store.ClaimParams{Limit: 1, Lease: time.Minute})
		require.NoError(t, err)
		require.Len(t, c.Leases, 1)
	}
	var generic, custom int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1`,
		s.sql.claim).Scan(&generic, &custom))
	assert.Equal(t, int64(claims), generic, "claims run with the generic plan")
	assert.Zero(t, custom, "claims planned for their arguments")
	var mode string
	require.NoError(t, pool.QueryRow(ctx, "SHOW plan_cache_mode").Scan(&mode))
	assert.Equal(t, "auto", mode, "the setting outlives the claim")
}

// unknownQueue returns a store on a queue that the statistics of its
// table do not know: the table, in a schema of its own, was analyzed when
// it held only the 1,000 messages of another queue.
func unknownQueue(t *testing.T) (*pgxpool.Pool, *Store) {
	t.Helper()
	pool := testPool(t)
	schema := fmt.Sprintf("plan%d", time.Now().UnixNano())
	enqueueN(t, openStore(t, pool, freshQueue(), WithSchema(schema)), 1000)
	_, err := pool.Exec(ctx, `ANALYZE "`+schema+`".timingwheel_messages`)
	require.NoError(t, err)
	return pool, openStore(t, pool, freshQueue(), WithSchema(schema))
}

// enqueueN enqueues n messages due now to s.
func enqueueN(t *testing.T, s *Store, n int) {
	t.Helper()
	msgs := make([]durable.Message, n)
	for i := range msgs {
		msgs[i] = durable.Message{ID: fmt.Sprintf("m%05d", i), Payload: []byte("p")}
	}
	require.NoError(t, s.Enqueue(ctx, msgs))
}

// A planNode is a node of EXPLAIN (FORMAT JSON)'s plan.
type planNode struct {
	NodeType     string  `json:"Node Type"`
	RelationName string  `json:"Relation Name"`
	ActualRows   float64 `json:"Actual Rows"`
	ActualLoops  float64 `json:"Actual Loops"`
	// Filtered are the rows a scan read and its filter then dropped.
	Filtered float64    `json:"Rows Removed by Filter"`
	Plans    []planNode `json:"Plans"`
}

// find returns the first node of type typ in n's tree, depth first.
func (n *planNode) find(typ string) *planNode {
	if n.NodeType == typ {
		return n
	}
	for i := range n.Plans {
		if f := n.Plans[i].find(typ); f != nil {
			return f
		}
	}
	return nil
}

// rowsRead returns the rows that the scans of relation below n read,
// over all their loops: those they returned and those their filters
// dropped.
func (n *planNode) rowsRead(relation string) float64 {
	var rows float64
	for i := range n.Plans {
		c := &n.Plans[i]
		if c.RelationName == relation {
			rows += (c.ActualRows + c.Filtered) * c.ActualLoops
		}
		rows += c.rowsRead(relation)
	}
	return rows
}

// Acks and confirmations of many leases read the rows of those leases
// and no others, even for a queue that the table's statistics do not
// know yet; before, each statement read every message in flight in the
// queue.
func TestLeaseStatementsReadOnlyTheirRows(t *testing.T) {
	pool, s := unknownQueue(t)
	const inFlight, batch = 20000, 100
	enqueueN(t, s, inFlight)
	var leases []store.Lease
	for len(leases) < inFlight {
		c, err := s.Claim(ctx, store.ClaimParams{Limit: MaxClaim, Held: MaxClaim, Lease: time.Minute})
		require.NoError(t, err)
		require.NotEmpty(t, c.Leases)
		leases = append(leases, c.Leases...)
	}
	// With a plan made for the arguments, and with the generic plan that
	// PostgreSQL may keep for a prepared statement after five runs. Each
	// statement is rolled back.
	ids := make([][]byte, batch)
	tokens := make([]int64, batch)
	for i := range ids {
		ids[i], tokens[i] = []byte(leases[i].ID), int64(leases[i].Token)
	}
	part := func(lo, hi int) func() ([][]byte, []int64) {
		return func() ([][]byte, []int64) { return ids[lo:hi], tokens[lo:hi] }
	}
	none := part(0, 0)
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		for _, st := range []struct {
			name          string
			acks, confirm func() ([][]byte, []int64)
		}{
			{"a lone confirmation", none, part(0, 1)},
			{"a lone ack", part(0, 1), none},
			{"confirmations alone", none, part(0, batch/2)},
			{"acks and confirmations", part(0, batch/2), part(batch/2, batch)},
			{"acks alone", part(batch/2, batch), none},
		} {
			name := mode + ", " + st.name
			ackIDs, ackTokens := st.acks()
			confirmIDs, confirmTokens := st.confirm()
			read := rowsReadByPlan(t, pool, mode, s.sql.leases, s.queue, ackIDs, ackTokens, confirmIDs, confirmTokens, bys(confirmIDs))
			// Each row is read by its lock, its kind's write and its join.
			n := len(ackIDs) + len(confirmIDs)
			assert.LessOrEqual(t, read, float64(3*n), "%s of %d leases, %d in flight: rows read", name, n, inFlight)
			assert.Positive(t, read, name)
		}
	}
}

// bys returns the By (µs) of confirmations of ids: an hour for every
// other one, 0 (the deadline kept) for the others, so that a statement
// carries both.
func bys(ids [][]byte) []int64 {
	out := make([]int64, len(ids))
	for i := range out {
		if i%2 == 0 {
			out[i] = int64(time.Hour / time.Microsecond)
		}
	}
	return out
}

// The statements that change or read one message find it through the
// primary key, even for a queue that the table's statistics do not know
// yet, where a partial index of its state, estimated at one row for the
// queue, would read every message of the queue in that state.
func TestOneMessageStatementsReadOneRow(t *testing.T) {
	pool, s := unknownQueue(t)
	const inFlight = 20000
	enqueueN(t, s, inFlight)
	var leases []store.Lease
	for len(leases) < inFlight {
		c, err := s.Claim(ctx, store.ClaimParams{Limit: MaxClaim, Lease: time.Minute})
		require.NoError(t, err)
		require.NotEmpty(t, c.Leases)
		leases = append(leases, c.Leases...)
	}
	l := leases[len(leases)/2]
	id, token := []byte(l.ID), int64(l.Token)
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		for _, st := range []struct {
			name string
			sql  string
			args []any
		}{
			{"extend", s.sql.extend, []any{s.queue, id, token, int64(1000)}},
			{"retry", s.sql.retry, []any{s.queue, id, token, int64(1000), []byte("e"), false, s.channel, false}},
			{"kill", s.sql.kill, []any{s.queue, id, token, []byte("e"), false, int64(0), int64(0)}},
			{"cancel", s.sql.cancel, []any{s.queue, id}},
			{"get", s.sql.get, []any{s.queue, id}},
		} {
			name := mode + ", " + st.name
			read := rowsReadByPlan(t, pool, mode, st.sql, st.args...)
			// The head of the pending messages, which retry reads, is one
			// more row; the message itself may be read by a lookup and by
			// its write.
			assert.LessOrEqual(t, read, float64(3), "%s, %d in flight: rows read", name, inFlight)
			assert.Positive(t, read, name)
		}
	}
	// Every message of the queue dead but one, the oldest with the
	// greatest IDs, and a series whose pending message is one of them.
	names := newNames(s.opts.schema)
	last := leases[len(leases)-1]
	_, err := pool.Exec(ctx, `UPDATE `+names.messages+`
		SET state = 3, deadline = NULL,
			died_at = now() - interval '1 hour' - substring(convert_from(id, 'UTF8') FROM 2)::int * interval '1 ms'
		WHERE queue = $1 AND id <> $2`, s.queue, []byte(last.ID))
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO `+names.series+` (queue, name, fingerprint, last_ns, next_ns, pending)
		VALUES ($1, 's', '', 0, 0, $2)`, s.queue, id)
	require.NoError(t, err)
	const trim = 100 // the most dead letters a kill deletes by age
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		for _, st := range []struct {
			name string
			most float64
			sql  string
			args []any
		}{
			{"requeue", 3, s.sql.requeue, []any{s.queue, id, time.Now(), false, s.channel}},
			// The letters older than a second, found through the dead index,
			// then deleted by their IDs.
			{"kill, trimming by age", 3 + 3*trim, s.sql.kill,
				[]any{s.queue, []byte(last.ID), int64(last.Token), []byte("e"), false, int64(0), int64(1_000_000)}},
			// A kill of a lease no longer current kills nothing, and
			// neither counts nor trims the letters.
			{"kill of a stale lease, trimming by count", 3, s.sql.kill,
				[]any{s.queue, []byte(last.ID), int64(last.Token) + 1, []byte("e"), false, int64(10), int64(0)}},
			{"delete series", 3, s.sql.seriesDelete, []any{s.queue, []byte("s")}},
		} {
			read := rowsReadByPlan(t, pool, mode, st.sql, st.args...)
			assert.LessOrEqual(t, read, st.most, "%s, %s, %d dead: rows read", mode, st.name, inFlight-1)
			assert.Positive(t, read, mode+", "+st.name)
		}
	}
}

// rowsReadByPlan runs sql with args under EXPLAIN ANALYZE in a
// transaction that it rolls back, with plan_cache_mode set to mode, and
// returns the rows of timingwheel_messages its plan read. The statement is
// prepared and run with EXECUTE, so that force_generic_plan plans it
// without its arguments (EXPLAIN of the statement itself would plan it
// with them).
func rowsReadByPlan(t *testing.T, pool *pgxpool.Pool, mode, sql string, args ...any) float64 {
	t.Helper()
	root := planByMode(t, pool, mode, sql, args...)
	read := root.rowsRead("timingwheel_messages")
	if root.RelationName == "timingwheel_messages" && root.NodeType != "ModifyTable" {
		read += (root.ActualRows + root.Filtered) * root.ActualLoops // a scan alone
	}
	return read
}

// planByMode runs sql with args as a prepared statement under EXPLAIN
// ANALYZE, with plan_cache_mode set to mode, in a transaction it rolls
// back, and returns the plan.
func planByMode(t *testing.T, pool *pgxpool.Pool, mode, sql string, args ...any) planNode {
	t.Helper()
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, "SET LOCAL plan_cache_mode = "+mode)
	require.NoError(t, err)
	const name = "plan_test"
	_, err = tx.Conn().Prepare(ctx, name, sql)
	require.NoError(t, err)
	defer func() { _ = tx.Conn().Deallocate(ctx, name) }()
	params := make([]string, len(args))
	for i, a := range args {
		params[i] = sqlLiteral(t, a)
	}
	var plan []struct{ Plan planNode }
	require.NoError(t, tx.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE "+name+"("+strings.Join(params, ", ")+")").Scan(&plan))
	require.Len(t, plan, 1)
	return plan[0].Plan
}

// sqlLiteral writes a as an SQL literal, for EXECUTE, which takes no
// parameters of its own.
func sqlLiteral(t *testing.T, a any) string {
	t.Helper()
	switch v := a.(type) {
	case string:
		return "'" + strings.ReplaceAll(v, "'", "''") + "'"
	case []byte:
		return fmt.Sprintf("'\\x%x'::bytea", v)
	case int64:
		return fmt.Sprint(v)
	case bool:
		return fmt.Sprint(v)
	case time.Time:
		return "'" + v.UTC().Format(time.RFC3339Nano) + "'::timestamptz"
	case [][]byte:
		items := make([]string, len(v))
		for i, b := range v {
			items[i] = sqlLiteral(t, b)
		}
		return "ARRAY[" + strings.Join(items, ", ") + "]::bytea[]"
	case []int64:
		items := make([]string, len(v))
		for i, n := range v {
			items[i] = fmt.Sprint(n)
		}
		return "ARRAY[" + strings.Join(items, ", ") + "]::bigint[]"
	}
	t.Fatalf("no SQL literal for %T", a)
	return ""
}

// A claim, sent with the setting of its plan in one batch, works in each
// of pgx's query modes, the simple protocol of PgBouncer users included.
func TestClaimInEveryQueryExecMode(t *testing.T) {
	testPool(t) // skips without PostgreSQL
	for _, mode := range []string{"cache_statement", "cache_describe", "describe_exec", "exec", "simple_protocol"} {
		t.Run(mode, func(t *testing.T) {
			cfg, err := pgxpool.ParseConfig(server.ConnString() + " pool_max_conns=2 default_query_exec_mode=" + mode)
			require.NoError(t, err)
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			require.NoError(t, err)
			defer pool.Close()
			s := openStore(t, pool, freshQueue())
			assert.Equal(t, mode == "cache_statement", s.keepsPlans, "the setting goes only where plans are kept")
			enqueueN(t, s, 3)
			c, err := s.Claim(ctx, store.ClaimParams{Limit: 5, Lease: time.Minute})
			require.NoError(t, err)
			require.Len(t, c.Leases, 3)
			for _, l := range c.Leases {
				require.NoError(t, s.Ack(ctx, store.LeaseRef{ID: l.ID, Token: l.Token}))
			}
			st, err := s.Stats(ctx)
			require.NoError(t, err)
			assert.Zero(t, st.Pending+st.InFlight)
		})
	}
}
