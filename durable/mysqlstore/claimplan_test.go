package mysqlstore

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// explain returns the rows of EXPLAIN query, each as "column=value"
// pairs, and the key and Extra of each table's row.
// requireUpdateByPrimaryKey checks that a plan updates the table t, and
// finds its rows there through the primary key.
func requireUpdateByPrimaryKey(t *testing.T, plan, keys []string) {
	t.Helper()
	found := false
	for i, k := range keys {
		if strings.Contains(plan[i], "table=t ") {
			require.Equal(t, "PRIMARY", k, plan[i])
			found = true
		}
	}
	require.True(t, found, "the plan updates t")
}

func explain(t *testing.T, query string, args ...any) (plan []string, keys, extras []string) {
	t.Helper()
	rows, err := testDBHandle(t).QueryContext(ctx, "EXPLAIN "+expand(query), args...)
	require.NoError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rows.Scan(ptrs...))
		var line []string
		for i, c := range cols {
			line = append(line, c+"="+vals[i].String)
			switch c {
			case "key":
				keys = append(keys, vals[i].String)
			case "Extra":
				extras = append(extras, vals[i].String)
			}
		}
		plan = append(plan, strings.Join(line, " "))
	}
	require.NoError(t, rows.Err())
	return plan, keys, extras
}

// TestClaimPlan: a claim's statements read only the queue's entries of
// the pending state in the index timingwheel_order, in its order (no
// sort), whatever the other queues and states hold; the lease's update
// finds each row by its primary key.
func TestClaimPlan(t *testing.T) {
	s, other := newStore(t), newStore(t)
	past := time.Now().Add(-time.Hour)
	for _, st := range []*Store{s, other} {
		var msgs []store.Message
		for i := range 3000 {
			msgs = append(msgs, store.Message{ID: fmt.Sprintf("m%05d", i), Due: past.Add(time.Duration(i) * time.Second)})
		}
		require.NoError(t, st.Enqueue(ctx, msgs))
		_, err := st.Claim(ctx, store.ClaimParams{Limit: 500, Lease: time.Hour}) // some in flight
		require.NoError(t, err)
	}
	_, err := testDBHandle(t).ExecContext(ctx, expand("ANALYZE TABLE {T}"))
	require.NoError(t, err)

	plan, keys, extras := explain(t, lockSQL, s.queue, datetime(time.Now()), s.queue, 100)
	t.Logf("EXPLAIN of the claim's lock:\n%s", strings.Join(plan, "\n"))
	require.Equal(t, "timingwheel_order", keys[0], "the claim's lock reads the index of the states' orders")
	require.NotContains(t, extras[0], "filesort", "in the index's order")

	plan, keys, extras = explain(t, peekSQL, s.queue, s.queue, s.queue, 600)
	t.Logf("EXPLAIN of the claim's peek:\n%s", strings.Join(plan, "\n"))
	for i, k := range keys {
		if strings.Contains(plan[i], "table=x") || strings.Contains(plan[i], "table=f") {
			require.Equal(t, "timingwheel_order", k, plan[i])
			require.NotContains(t, extras[i], "filesort", plan[i])
		}
	}

	lease := strings.Replace(leaseSQL, "%s", "SELECT ? AS id, CAST(? AS DATETIME(6)) AS ts, ? AS seq, ? AS token, ? AS held UNION ALL SELECT ?, ?, ?, ?, ?", 1)
	now := datetime(time.Now())
	plan, keys, _ = explain(t, lease, "m00600", now, 1, 1, 0, "m00601", now, 2, 2, 0, s.queue)
	t.Logf("EXPLAIN of the claim's update:\n%s", strings.Join(plan, "\n"))
	requireUpdateByPrimaryKey(t, plan, keys)
}
