package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// claimSQL leases up to $2 pending messages due by the database's now
// plus $4 µs, earliest first, in one statement:
//
//   - n reads the database's now, and whether the queue is paused (then
//     c takes nothing: the check is part of the claim);
//
//   - c locks them, FOR UPDATE SKIP LOCKED in (due, seq) order on the
//     pending index, so that concurrent claims take different messages
//     and never wait for each other;
//
//   - o numbers them and sums their payload sizes (FOR UPDATE cannot share
//     a SELECT with window functions), and k keeps those within $6 bytes
//     (the first at least), computing each one's ready time, whether it
//     is claimed ahead (held: due after now),
//     a new fencing token and a new seq, in order;
//
//   - u makes them in flight, each with a lease of $5 µs after its ready
//     time, or of $8 for those claimed ahead beyond the first $3 (held
//     for later),
//     finding each row by the ctid that c locked,
//     with a TID scan of their array: one row read per message, whatever
//     the planner estimates of k and of the queue (a queue whose rows the
//     table's statistics do not know yet is estimated at one row, and a
//     join on the ID alone was then planned as a scan of every row of the
//     queue, for each claim; the generic plan, which estimates k at a
//     tenth of the queue, joined on the ctid by the same scan).
//     A row that another transaction changed and committed after the
//     statement's snapshot and before c locked it is locked at its new
//     version, which the snapshot does not see: u leaves it as it is,
//     pending, and the hints below count it as pending;
//
//   - the final SELECT returns the leases, in order, with the claim's now
//     and the hints: the earliest due time still pending (among the first
//     $2+1 pending the statement sees, which holds it whatever it
//     claimed; the statement sees the rows u changed as they were before), the earliest deadline in flight (of those it sees and
//     those it made), and how many pending are still due by the horizon
//     (up to $7), and whether it locked messages it then left pending
//     (beyond $6 bytes), and whether the queue is paused. With no lease,
//     one row of hints alone. Each row ends with a later reading of the
//     clock, taken as the row is made, below the sort, so after every
//     row of u: the latest of them is the Claimed.Now (see readClaim).
//
//     $1 queue, $2 limit, $3 how many, the first, are not held, $4 ahead
//     (µs), $5 lease (µs), $6 payload bytes, $7 cap of DueSoon, $8 lease of
//     those beyond $3 (µs)
const claimSQL = `WITH n AS MATERIALIZED (SELECT clock_timestamp() AS now, 
	EXISTS (SELECT 1 FROM {QUEUES} q WHERE q.queue = $1::text AND q.paused) AS paused),
c AS MATERIALIZED (
	SELECT t.ctid AS tid, t.id, t.due, t.seq, octet_length(t.payload)::bigint AS size
	FROM {T} t
	WHERE t.queue = $1::text AND t.state = 1 AND NOT (SELECT paused FROM n)
		AND t.due <= (SELECT now FROM n) + $4::bigint * interval '1 microsecond'
	ORDER BY t.due, t.seq
	LIMIT $2::bigint
	FOR UPDATE SKIP LOCKED
),
o AS MATERIALIZED (
	SELECT c.tid, c.id, c.due, c.seq,
		row_number() OVER w AS rn,
		sum(c.size) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS upto
	FROM c
	WINDOW w AS (ORDER BY c.due, c.seq)
),
k AS MATERIALIZED (
	SELECT o.tid, o.id, o.due, o.rn, o.due > n.now AS held,
		greatest(o.due, n.now) AS ready, nextval({TOK}) AS token, nextval({SEQ}) AS seq
	FROM o CROSS JOIN n
	WHERE o.rn = 1 OR o.upto <= $6::bigint
	ORDER BY o.rn
),
u AS (
	UPDATE {T} t SET state = 2, attempt = t.attempt + 1, token = k.token, held = k.held,
		deadline = k.ready + CASE WHEN k.held AND k.rn > $3::bigint THEN $8::bigint ELSE $5::bigint END * interval '1 microsecond',
		seq = k.seq
	FROM k
	WHERE t.ctid = ANY (ARRAY(SELECT k2.tid FROM k k2)) AND t.ctid = k.tid AND t.queue = $1::text AND t.id = k.id
	RETURNING t.id, t.payload, t.due, t.attempt, t.token, t.deadline, t.held, t.last_error, k.ready, k.rn,
		t.kind, t.max_attempts, t.timeout_ns
)
SELECT u.id, u.payload, u.due, u.attempt, u.token, u.deadline, u.held, u.last_error, u.ready,
	u.kind, u.max_attempts, u.timeout_ns,
	n.now,
	(SELECT min(x.due) FROM (
		SELECT p.id, p.due FROM {T} p WHERE p.queue = $1::text AND p.state = 1
		ORDER BY p.due, p.seq LIMIT $2::bigint + 1) x
	WHERE x.id NOT IN (SELECT u3.id FROM u u3)),
	least(
		(SELECT f.deadline FROM {T} f WHERE f.queue = $1::text AND f.state = 2 ORDER BY f.deadline, f.seq LIMIT 1),
		(SELECT min(u2.deadline) FROM u u2)),
	(SELECT count(*) FROM (
		SELECT p.id FROM {T} p WHERE p.queue = $1::text AND p.state = 1
			AND p.due <= (SELECT now FROM n) + $4::bigint * interval '1 microsecond'
		ORDER BY p.due, p.seq LIMIT $2::bigint + $7::bigint) x
	WHERE x.id NOT IN (SELECT u3.id FROM u u3)),
	(SELECT count(*) FROM c) > (SELECT count(*) FROM k),
	n.paused,
	clock_timestamp()
FROM n LEFT JOIN u ON true
ORDER BY u.rn`

// latest returns the latest of ts.
func latest(ts ...time.Time) time.Time {
	var l time.Time
	for _, t := range ts {
		if t.After(l) {
			l = t
		}
	}
	return l
}

// lockedRetry is how long after its horizon a Claim that skipped due
// messages locked by others says to claim again (see Claim).
const lockedRetry = 20 * time.Millisecond

// Claim implements store.Store: one statement, whatever the number of
// messages it leases, run with the plan PostgreSQL keeps for it where the
// pool keeps plans (see genericPlanSQL). A p.Limit above MaxClaim is cut
// to it; the leases (p.Lease, p.HeldLease) and the horizon are rounded up
// to the microsecond. A Claim also stops at about 4 MiB of payloads,
// leasing the message that would take it over only if it is the first.
// Due times are compared with the database's clock (clock_timestamp()),
// which Claimed.Now is.
//
// Messages locked by another transaction (another claim in progress, or
// an EnqueueTx or Enqueue replacing them, not committed yet) are skipped,
// not waited for; if the claim skipped messages due by its horizon, its
// NextDue is 20ms after the horizon rather than their due time, so that
// a queue does not claim again and again while the transaction holds
// them. A message whose lock is given back without a change (a claim that
// failed) is claimed that much later.
func (s *Store) Claim(ctx context.Context, p store.ClaimParams) (store.Claimed, error) {
	if err := s.check(); err != nil {
		return store.Claimed{}, err
	}
	var c store.Claimed
	err := s.queryGeneric(ctx, s.sql.claim, s.claimArgs(p), func(rows pgx.Rows) (err error) {
		c, err = s.readClaim(rows, p)
		return err
	})
	if err != nil {
		return store.Claimed{}, wrap("claim", err)
	}
	if len(c.Leases) > 0 {
		// A notification may have been decided against by a writer that
		// saw a message this claim took as earlier than its own, and the
		// claim may not have seen that writer's commit: look again soon.
		s.wake.recheck()
	}
	return c, nil
}

// readClaim reads the leases and hints of the claim of p from rows.
func (s *Store) readClaim(rows pgx.Rows, p store.ClaimParams) (store.Claimed, error) {
	var (
		c       store.Claimed
		cut     bool      // left messages it could lease for their size
		claimed time.Time // the now the claim decided by (n.now)
	)
	for rows.Next() {
		var (
			id, payload, lastError []byte
			due, deadline, ready   *time.Time
			attempt                *int32
			token                  *int64
			held                   *bool
			kind                   []byte
			maxAttempts            *int32
			timeout                *int64
			now                    time.Time
			nextDue, nextDeadline  *time.Time
			dueSoon                int64
			paused                 bool
			later                  time.Time
		)
		if err := rows.Scan(&id, &payload, &due, &attempt, &token, &deadline, &held, &lastError, &ready,
			&kind, &maxAttempts, &timeout, &now, &nextDue, &nextDeadline, &dueSoon, &cut, &paused, &later); err != nil {
			return store.Claimed{}, err
		}
		// Now is the latest reading of the clock: the queue maps the
		// leases' instants to its own clock from it and the moment the
		// claim returned, so the later it was read, the less late a
		// message claimed ahead is handed out (n.now, read as the
		// statement began, is a whole claim's time older).
		claimed = now
		c.Now, c.NextDue, c.NextDeadline = latest(c.Now, now, later), orZero(nextDue), orZero(nextDeadline)
		c.DueSoon = int(min(dueSoon, maxDueSoon))
		c.Paused = paused
		if id == nil {
			continue // no lease: the row of hints alone
		}
		if payload == nil {
			payload = []byte{}
		}
		c.Leases = append(c.Leases, store.Lease{
			Message: store.Message{ID: string(id), Kind: string(kind), Payload: payload, Due: *due,
				MaxAttempts: int(*maxAttempts), Timeout: time.Duration(*timeout)},
			Attempt:   int(*attempt),
			Token:     uint64(*token),
			Deadline:  *deadline,
			Ready:     *ready,
			Ahead:     *held,
			LastError: string(lastError),
		})
	}
	if err := rows.Err(); err != nil {
		return store.Claimed{}, err
	}
	horizon := claimed.Add(max(p.Ahead, 0))
	if !c.Paused && !cut && len(c.Leases) < max(0, min(p.Limit, MaxClaim)) && !c.NextDue.IsZero() && !c.NextDue.After(horizon) {
		// Messages due by the horizon that the claim did not lease,
		// though it could have: others hold them locked (a claim in
		// progress, a transaction that replaces them). Claiming again at
		// once would skip them again, and again, while they are held: the
		// next claim comes a little after the horizon instead.
		c.NextDue = c.Now.Add(max(p.Ahead, 0) + lockedRetry)
	}
	return c, nil
}

// claimArgs returns the arguments of claimSQL for p. The leases claimed
// ahead beyond the first notHeld are of p.HeldLease, if positive, else
// of p.Lease as the others.
func (s *Store) claimArgs(p store.ClaimParams) []any {
	limit := max(0, min(p.Limit, MaxClaim))
	notHeld := min(limit, max(0, p.Limit-max(p.Held, 0)))
	heldLease := p.Lease
	if p.HeldLease > 0 {
		heldLease = p.HeldLease
	}
	return []any{s.queue, int64(limit), int64(notHeld),
		micros(max(p.Ahead, 0)), micros(p.Lease), int64(maxClaimBytes), int64(maxDueSoon), micros(heldLease)}
}
