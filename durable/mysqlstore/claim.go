package mysqlstore

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// A Claim is a read and, when something is due, a transaction:
//
//   - peekSQL reads, without locking anything, the database's now, whether
//     the queue is paused, the earliest lease deadline, and the first
//     pending messages (ID and due time; up to the limit and maxDueSoon
//     more): the hints, and whether anything is due by the horizon. An
//     idle queue's claim ends there: one statement.
//   - lockSQL locks the earliest due messages by the horizon (on the
//     peek's now), FOR UPDATE SKIP LOCKED in the order of the index
//     timingwheel_order, so that concurrent claims take different
//     messages and never wait for each other; it checks the paused flag
//     itself, so that a pause committed before it holds. It reads the
//     database's now again, the claim's now from then on: a lease is
//     not shortened by the time between the two statements, however
//     long on a loaded server, and the Claimed.Now of a claim that
//     leased is never before the deadline of a lease it took over (the
//     reap of that lease came between them).
//   - leaseSQL makes them in flight, each with the lease computed here,
//     in one place, from the lock's now: ready is the later of its due
//     time and now, held whether it is due after now (claimed ahead),
//     the deadline ready plus the lease (HeldLease for one held beyond
//     the first Limit-Held, if positive), its token greater
//     than any it had, its seq its place in the claim.

// peekSQL: one row per pending message among the first ?, by due time,
// with the hints; one row of hints alone if none is pending.
//
//	queue, queue, queue, limit
const peekSQL = `SELECT US(n.cnow), n.paused, n.ndl, p.id, US(p.ts)
FROM (SELECT {NOW} AS cnow,
	EXISTS (SELECT 1 FROM {Q} q WHERE q.queue = ? AND q.paused = 1) AS paused,
	(SELECT US(f.ts) FROM {T} f WHERE f.queue = ? AND f.state = 2 ORDER BY f.ts, f.seq LIMIT 1) AS ndl) n
LEFT JOIN (SELECT x.id, x.ts, x.seq FROM {T} x WHERE x.queue = ? AND x.state = 1 ORDER BY x.ts, x.seq LIMIT ?) p ON 1 = 1
ORDER BY p.ts, p.seq`

// lockSQL locks up to ? pending messages due by ?, earliest first,
// skipping those others hold, unless the queue is paused; each row with
// the database's now.
//
//	queue, horizon, queue, limit
const lockSQL = `SELECT US({NOW}), id, US(ts), kind, payload, max_attempts, timeout_ns, attempt, token, last_error FROM {T}
WHERE queue = ? AND state = 1 AND ts <= ?
	AND NOT EXISTS (SELECT 1 FROM {Q} q WHERE q.queue = ? AND q.paused = 1)
ORDER BY ts, seq LIMIT ? FOR UPDATE SKIP LOCKED`

// leaseSQL makes the messages of the rows that follow it, which lockSQL
// locked, in flight. Each row: id, deadline, seq, token, held.
const leaseSQL = `UPDATE {T} t JOIN (%s) v ON t.queue = ? AND t.id = v.id
SET t.state = 2, t.attempt = t.attempt + 1, t.ts = v.ts, t.seq = v.seq, t.token = v.token, t.held = v.held`

// lockedRetry is how long after its horizon a Claim that skipped due
// messages locked by others says to claim again (see Claim).
const lockedRetry = 20 * time.Millisecond

// A peek is what peekSQL read.
type peek struct {
	now, nextDeadline time.Time
	paused            bool
	pending           []pendingEntry // the first pending, by due time
	full              bool           // pending may not be all of them
}

type pendingEntry struct {
	id  string
	due time.Time
}

// Claim implements store.Store: one statement on an idle queue, and a
// transaction of two more when something is due. A p.Limit above MaxClaim
// is cut to it; the leases (p.Lease, and p.HeldLease for those beyond the
// first p.Limit-p.Held) and the horizon are rounded up to the
// microsecond. A Claim also stops at about 4 MiB of payloads, leasing the
// message that would take it over only if it is the first.
//
// Messages locked by another transaction (another claim in progress, or
// an EnqueueTx replacing them, not committed yet) are skipped, not waited
// for; if the claim skipped messages due by its horizon, its NextDue is
// 20ms after the horizon rather than their due time, so that a queue
// does not claim again and again while the transaction holds them.
func (s *Store) Claim(ctx context.Context, p store.ClaimParams) (store.Claimed, error) {
	limit := max(0, min(p.Limit, MaxClaim))
	notHeld := min(limit, max(0, p.Limit-max(p.Held, 0)))
	var c store.Claimed
	err := s.write(ctx, "claim", func(ctx context.Context) error {
		pk, err := s.peek(ctx, limit+maxDueSoon)
		if err != nil {
			return err
		}
		horizon := pk.now.Add(time.Duration(micros(max(p.Ahead, 0))) * time.Microsecond)
		var (
			leases []store.Lease
			now    time.Time
			cut    bool
		)
		if !pk.paused && limit > 0 && len(pk.pending) > 0 && !pk.pending[0].due.After(horizon) {
			err := s.inTx(ctx, func(tx *sql.Tx) (err error) {
				leases, now, cut, err = s.lease(ctx, tx, horizon, limit, notHeld, p.Lease, p.HeldLease)
				return err
			})
			if err != nil {
				return err
			}
		}
		if len(leases) > 0 {
			pk.now = now // the lock's, which the leases are from
		}
		c = hints(pk, leases, horizon, cut, limit)
		return nil
	})
	if err != nil {
		return store.Claimed{}, err
	}
	return c, nil
}

// peek runs peekSQL for the first n pending messages.
func (s *Store) peek(ctx context.Context, n int) (peek, error) {
	rows, err := s.db.QueryContext(ctx, expand(peekSQL), s.queue, s.queue, s.queue, n)
	if err != nil {
		return peek{}, err
	}
	defer rows.Close()
	var pk peek
	for rows.Next() {
		var (
			now      int64
			paused   bool
			ndl, due sql.NullInt64
			id       []byte
		)
		if err := rows.Scan(&now, &paused, &ndl, &id, &due); err != nil {
			return peek{}, err
		}
		pk.now, pk.paused, pk.nextDeadline = instant(now), paused, orZero(ndl)
		if due.Valid {
			pk.pending = append(pk.pending, pendingEntry{id: string(id), due: instant(due.Int64)})
		}
	}
	pk.full = len(pk.pending) == n
	return pk, rows.Err()
}

// lease locks and leases, in tx, up to limit messages due by horizon,
// with leases of lease after their ready time; those claimed ahead beyond
// the first notHeld (held), of heldLease if positive.
// It returns the database's now at the lock, which the leases are from
// (the zero time if it locked nothing).
func (s *Store) lease(ctx context.Context, tx *sql.Tx, horizon time.Time, limit, notHeld int,
	lease, heldLease time.Duration) (leases []store.Lease, now time.Time, cut bool, err error) {
	rows, err := tx.QueryContext(ctx, expand(lockSQL), s.queue, datetime(horizon), s.queue, limit)
	if err != nil {
		return nil, now, false, err
	}
	defer rows.Close()
	size := 0
	var seq uint64
	leaseUS, heldUS := time.Duration(micros(lease))*time.Microsecond, time.Duration(micros(heldLease))*time.Microsecond
	for rows.Next() {
		var (
			id, kind, payload, lastError []byte
			lockNow, due, timeout        int64
			maxAttempts, attempt         int
			token                        uint64
		)
		if err := rows.Scan(&lockNow, &id, &due, &kind, &payload, &maxAttempts, &timeout, &attempt, &token,
			&lastError); err != nil {
			return nil, now, false, err
		}
		if now.IsZero() {
			now = instant(lockNow) // the statement's, the same in every row
			seq = seqOf(now)
		}
		if size += len(payload); len(leases) > 0 && size > maxClaimBytes {
			cut = true // left pending, unlocked at the commit
			continue
		}
		l := store.Lease{
			Message: store.Message{ID: string(id), Kind: string(kind), Payload: payload, Due: instant(due),
				MaxAttempts: maxAttempts, Timeout: time.Duration(timeout)},
			Attempt:   attempt + 1,
			Token:     max(token+1, seq+uint64(len(leases))),
			Ready:     laterOf(instant(due), now),
			LastError: string(lastError),
		}
		l.Ahead = l.Due.After(now) // due by now: handed out by the claim
		l.Deadline = l.Ready.Add(leaseUS)
		if l.Ahead && heldLease > 0 && len(leases) >= notHeld {
			l.Deadline = l.Ready.Add(heldUS) // held for later
		}
		leases = append(leases, l)
	}
	if err := rows.Err(); err != nil {
		return nil, now, false, err
	}
	rows.Close()
	if len(leases) == 0 {
		return nil, now, cut, nil
	}
	var v strings.Builder
	args := make([]any, 0, 5*len(leases)+1)
	for i := range leases {
		if i > 0 {
			v.WriteString(" UNION ALL ")
		}
		v.WriteString("SELECT ? AS id, CAST(? AS DATETIME(6)) AS ts, ? AS seq, ? AS token, ? AS held")
		l := &leases[i]
		args = append(args, []byte(l.ID), datetime(l.Deadline), seq+uint64(i), l.Token, l.Ahead)
	}
	args = append(args, s.queue)
	if _, err := tx.ExecContext(ctx, expand(strings.Replace(leaseSQL, "%s", v.String(), 1)), args...); err != nil {
		return nil, now, false, err
	}
	return leases, now, cut, nil
}

// hints fills in the Claimed of a claim from its peek and its leases.
func hints(pk peek, leases []store.Lease, horizon time.Time, cut bool, limit int) store.Claimed {
	c := store.Claimed{Leases: leases, Now: pk.now, NextDeadline: pk.nextDeadline, Paused: pk.paused}
	claimed := make(map[string]bool, len(leases))
	for _, l := range leases {
		claimed[l.ID] = true
		c.NextDeadline = earliest(c.NextDeadline, l.Deadline)
	}
	for _, e := range pk.pending {
		if claimed[e.id] {
			continue
		}
		if c.NextDue.IsZero() {
			c.NextDue = e.due
		}
		if !e.due.After(horizon) && c.DueSoon < maxDueSoon {
			c.DueSoon++
		}
	}
	if c.NextDue.IsZero() && pk.full {
		c.NextDue = pk.now // more pending than the peek read: ask again
	}
	if !c.Paused && !cut && len(leases) < limit && !c.NextDue.IsZero() && !c.NextDue.After(horizon) {
		// Messages due by the horizon that the claim did not lease,
		// though it could have: others hold them locked (a claim in
		// progress, a transaction that replaces them). Claiming again at
		// once would skip them again while they are held: the next claim
		// comes a little after the horizon instead.
		c.NextDue = horizon.Add(lockedRetry)
	}
	return c
}

// seqOf is the seq of the first row written at now (see seqNowSQL).
func seqOf(now time.Time) uint64 {
	return uint64(now.Sub(seqEpoch)/time.Microsecond) * seqRows
}

var seqEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// laterOf is the later of a and b.
func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
