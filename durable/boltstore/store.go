package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/seed64e23a5c/timingwheel/durable/store"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Store is the embedded store: one file on local disk, written with
// bbolt (go.etcd.io/bbolt), a B+tree with copy-on-write pages whose every
// committed transaction is on disk after one fsync and survives a crash
// whole or not at all. durable.Open uses it; Open opens one for
// durable.New.
//
// All writes go through one goroutine that commits the calls waiting
// together in one transaction (group commit). A file is used by one
// Store at a time: bbolt locks it.
type Store struct {
	db    *bolt.DB
	clock clock.Clock

	ops        chan *writeOp
	writerDone chan struct{}
	commits    atomic.Int64 // transactions committed (see Commits)
	ahead      aheadLeases  // leases claimed ahead, not confirmed yet

	closeMu sync.RWMutex
	closed  bool
}

var (
	_ store.Store        = (*Store)(nil)
	_ store.LocalClock   = (*Store)(nil)
	_ store.Pauser       = (*Store)(nil)
	_ store.SeriesKeeper = (*Store)(nil)
)

// Open opens the store in the file at path, creating it if it does not
// exist. It fails with ErrLocked if another Store holds the file for
// longer than the lock timeout (WithLockTimeout), and with ErrCorrupt if
// the file is not a valid store.
func Open(path string, opts ...Option) (s *Store, err error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.lockTimeout <= 0 {
		cfg.lockTimeout = DefaultLockTimeout
	}
	_, statErr := os.Stat(path)
	created := errors.Is(statErr, fs.ErrNotExist)
	db, err := openBolt(path, &bolt.Options{
		Timeout: cfg.lockTimeout,
		NoSync:  cfg.sync == SyncNever,
	})
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("%w: %s (waited %v)", ErrLocked, path, cfg.lockTimeout)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum),
		errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrInvalidMapping):
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
	case err != nil:
		return nil, fmt.Errorf("durable: open %s: %w", path, err)
	}
	err = createBuckets(db)
	if err == nil && created {
		err = syncDir(filepath.Dir(path)) // so that the new file's name survives a power cut
	}
	if err != nil {
		_ = db.Close()
		if errors.Is(err, berrors.ErrIncompatibleValue) {
			err = fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
		}
		return nil, fmt.Errorf("durable: open %s: %w", path, err)
	}
	s = &Store{
		db:         db,
		clock:      cfg.clock,
		ops:        make(chan *writeOp, maxBatch),
		writerDone: make(chan struct{}),
	}
	if s.clock == nil {
		s.clock = clock.New()
	}
	if err := s.loadPaused(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("durable: open %s: %w", path, err)
	}
	go s.groupCommit()
	return s, nil
}

// openBolt is bolt.Open, with a panic on a damaged file (bbolt reads
// some pages that way) turned into ErrCorrupt. bbolt has then locked and
// opened the file, and the half-made DB is out of reach: openBolt keeps
// the file it opened to unlock and close it, or later opens in this
// process would wait for the lock in vain.
func openBolt(path string, opts *bolt.Options) (db *bolt.DB, err error) {
	var file *os.File
	opts.OpenFile = func(name string, flag int, perm os.FileMode) (*os.File, error) {
		f, err := os.OpenFile(name, flag, perm)
		file = f
		return f, err
	}
	defer func() {
		if r := recover(); r != nil {
			if file != nil {
				unlockFile(file)
				_ = file.Close()
			}
			db, err = nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, path, r)
		}
	}()
	return bolt.Open(path, 0o600, opts)
}

// createBuckets makes the buckets of a new file, and checks an old one's.
func createBuckets(db *bolt.DB) (err error) {
	defer recoverCorrupt(&err)
	return db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketMsgs, bucketPending, bucketInflight, bucketDead, bucketMeta, bucketSeries} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
	})
}

// syncDir fsyncs the directory dir, making the names in it durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Clock implements LocalClock: it is the clock of WithClock (the
// machine's by default).
func (s *Store) Clock() clock.Clock { return s.clock }

// Commits counts the write transactions the store has committed, each
// one fsync with SyncAlways: concurrent writes share one (group commit).
func (s *Store) Commits() int64 { return s.commits.Load() }

// Path is the file's path.
func (s *Store) Path() string { return s.db.Path() }

// Close waits for the writes under way and closes the file.
func (s *Store) Close() error {
	s.closeMu.Lock()
	if s.closed {
		s.closeMu.Unlock()
		return nil
	}
	s.closed = true
	close(s.ops)
	s.closeMu.Unlock()
	<-s.writerDone
	return s.db.Close()
}

func (s *Store) now() int64 { return store.UnixNano(s.clock.Now()) }

// writeTxn runs fn in a write transaction of the group commit (see
// write), with the buckets at hand.
func (s *Store) writeTxn(ctx context.Context, fn func(t *txn) (bool, error)) error {
	return s.write(ctx, func(tx *bolt.Tx) (bool, error) {
		t, err := newTxn(tx)
		if err != nil {
			return false, err
		}
		return fn(t)
	})
}

// viewTxn runs fn in a read transaction, with the buckets at hand.
func (s *Store) viewTxn(fn func(t *txn) error) error {
	return s.view(func(tx *bolt.Tx) error {
		t, err := newTxn(tx)
		if err != nil {
			return err
		}
		return fn(t)
	})
}

// txn is a transaction with the helpers the methods share.
type txn struct {
	tx                                  *bolt.Tx
	msgs, pending, inflight, dead, meta *bolt.Bucket
}

func newTxn(tx *bolt.Tx) (*txn, error) {
	t := &txn{tx: tx, msgs: tx.Bucket(bucketMsgs), pending: tx.Bucket(bucketPending),
		inflight: tx.Bucket(bucketInflight), dead: tx.Bucket(bucketDead), meta: tx.Bucket(bucketMeta)}
	if t.msgs == nil || t.pending == nil || t.inflight == nil || t.dead == nil || t.meta == nil {
		return nil, fmt.Errorf("%w: a bucket is missing", ErrCorrupt)
	}
	return t, nil
}

func (t *txn) index(s msgState) *bolt.Bucket {
	switch s {
	case statePending:
		return t.pending
	case stateInflight:
		return t.inflight
	default:
		return t.dead
	}
}

func (t *txn) get(id string) (*record, error) {
	b := t.msgs.Get([]byte(id))
	if b == nil {
		return nil, nil
	}
	r, err := decodeRecord(b)
	return &r, err
}

// count adds delta to the number of messages in state s.
func (t *txn) count(s msgState, delta int64) error {
	var n int64
	if b := t.meta.Get(s.counterKey()); len(b) == 8 {
		n = int64(binary.BigEndian.Uint64(b))
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(n+delta))
	return t.meta.Put(s.counterKey(), b[:])
}

func (t *txn) counter(s msgState) int {
	if b := t.meta.Get(s.counterKey()); len(b) == 8 {
		return int(binary.BigEndian.Uint64(b))
	}
	return 0
}

// remove deletes r's index key and lowers its state's count. It leaves
// the record.
func (t *txn) remove(r *record) error {
	if err := t.index(r.state).Delete(r.key[:]); err != nil {
		return err
	}
	return t.count(r.state, -1)
}

// place puts r in state s at instant at, with a new sequence number, and
// writes it.
func (t *txn) place(id string, r *record, s msgState, at int64) error {
	seq, err := t.pending.NextSequence()
	if err != nil {
		return err
	}
	r.state, r.key = s, makeIndexKey(at, seq)
	if err := t.index(s).Put(r.key[:], []byte(id)); err != nil {
		return err
	}
	if err := t.count(s, 1); err != nil {
		return err
	}
	return t.msgs.Put([]byte(id), r.encode())
}

// delete removes the message r of id entirely.
func (t *txn) delete(id string, r *record) error {
	if err := t.remove(r); err != nil {
		return err
	}
	return t.msgs.Delete([]byte(id))
}

// first is the instant of the first key of b, or false if b is empty.
func first(b *bolt.Bucket) (time.Time, bool) {
	k, _ := b.Cursor().First()
	if len(k) != len(indexKey{}) {
		return time.Time{}, false
	}
	return fromUnixNano(indexKey(k).at()), true
}

func (t *txn) nextTimes() (due, deadline time.Time) {
	due, _ = first(t.pending)
	deadline, _ = first(t.inflight)
	return due, deadline
}

// leased looks up the in-flight message of lease l.
func (t *txn) leased(l store.LeaseRef) (*record, error) {
	r, err := t.get(l.ID)
	if err != nil {
		return nil, err
	}
	if r == nil || r.state != stateInflight || r.token != l.Token {
		return nil, store.ErrLeaseLost
	}
	return r, nil
}

// due collects up to limit keys of b whose instant is at or before now.
func due(b *bolt.Bucket, now int64, limit int) (keys, ids [][]byte) {
	c := b.Cursor()
	for k, v := c.First(); k != nil && len(keys) < limit; k, v = c.Next() {
		if len(k) != len(indexKey{}) || indexKey(k).at() > now {
			break
		}
		keys = append(keys, bytes.Clone(k))
		ids = append(ids, bytes.Clone(v))
	}
	return keys, ids
}

// maxDueSoon caps Claimed.DueSoon: a queue wakes no more receivers.
const maxDueSoon = 256

// countUpTo counts the keys of b whose instant is at or before at, up to
// limit.
func countUpTo(b *bolt.Bucket, at int64, limit int) int {
	n := 0
	c := b.Cursor()
	for k, _ := c.First(); k != nil && n < limit; k, _ = c.Next() {
		if len(k) != len(indexKey{}) || indexKey(k).at() > at {
			break
		}
		n++
	}
	return n
}

// Enqueue implements store.Store.
func (s *Store) Enqueue(ctx context.Context, msgs []store.Message) error {
	for i := range msgs {
		if err := msgs[i].Validate(); err != nil {
			return err
		}
	}
	return s.writeTxn(ctx, func(t *txn) (bool, error) {
		now := s.now()
		for _, m := range msgs {
			if err := s.enqueueIn(t, now, m); err != nil {
				return false, err
			}
		}
		return len(msgs) > 0, nil
	})
}

// enqueueIn writes m in t as Enqueue does.
func (s *Store) enqueueIn(t *txn, now int64, m store.Message) error {
	old, err := t.get(m.ID)
	if err != nil {
		return err
	}
	// The message's fields replace the old one's, zero or not.
	r := &record{due: now, enqueuedAt: now, kind: m.Kind, maxAttempts: uint32(m.MaxAttempts), timeout: m.Timeout,
		payload: m.Payload}
	if !m.Due.IsZero() {
		r.due = store.UnixNano(m.Due)
	}
	if old != nil {
		r.token = old.token
		if old.enqueuedAt != 0 { // kept: 0 is a version 1 record's unknown
			r.enqueuedAt = old.enqueuedAt
		}
		if old.state == stateInflight {
			s.ahead.take(m.ID, old.token)
		}
		if err := t.remove(old); err != nil {
			return err
		}
	}
	return t.place(m.ID, r, statePending, r.due)
}

// Cancel implements store.Store.
func (s *Store) Cancel(ctx context.Context, id string) (found bool, err error) {
	err = s.writeTxn(ctx, func(t *txn) (bool, error) {
		var err error
		found, err = s.cancelIn(t, id) // fn may run twice (see runBatch)
		return found, err
	})
	return found, err
}

// cancelIn cancels id in t as Cancel does, and reports whether it did.
func (s *Store) cancelIn(t *txn, id string) (bool, error) {
	r, err := t.get(id)
	switch {
	case err != nil:
		return false, err
	case r == nil:
		return false, nil
	case r.state == stateInflight && !s.ahead.take(id, r.token):
		return false, store.ErrInFlight
	}
	return true, t.delete(id, r)
}

// Claim implements store.Store.
func (s *Store) Claim(ctx context.Context, p store.ClaimParams) (c store.Claimed, err error) {
	limit, held, lease, ahead := p.Limit, p.Held, p.Lease, p.Ahead
	err = s.writeTxn(ctx, func(t *txn) (bool, error) {
		c = store.Claimed{} // fn may run twice (see runBatch)
		now := s.now()
		if t.pausedIn() {
			// A paused queue leases nothing; its leases expire as usual.
			c.NextDeadline, _ = first(t.inflight)
			c.Paused = true
			return false, nil
		}
		_, ids := due(t.pending, addDuration(now, max(ahead, 0)), limit)
		for i, id := range ids {
			r, err := t.get(string(id))
			if err != nil {
				return false, err
			}
			if r == nil || r.state != statePending {
				return false, fmt.Errorf("%w: pending index names %q, which is not pending", ErrCorrupt, id)
			}
			if err := t.remove(r); err != nil {
				return false, err
			}
			token, err := t.inflight.NextSequence()
			if err != nil {
				return false, err
			}
			r.attempt++
			r.token = token
			ready := max(now, r.due) // the one place of the claim's arithmetic
			early := r.due > now     // due by now: handed out by the claim
			deadline := addDuration(ready, lease)
			if early && p.HeldLease > 0 && i >= limit-max(held, 0) {
				deadline = addDuration(ready, p.HeldLease) // held beyond the first limit-held
			}
			if err := t.place(string(id), r, stateInflight, deadline); err != nil {
				return false, err
			}
			if early {
				s.ahead.add(string(id), token)
			}
			c.Leases = append(c.Leases, store.Lease{
				Message:   r.message(string(id)),
				Attempt:   int(r.attempt),
				Token:     token,
				Deadline:  fromUnixNano(deadline),
				Ready:     fromUnixNano(ready),
				Ahead:     early,
				LastError: r.lastError,
			})
		}
		c.NextDue, c.NextDeadline = t.nextTimes()
		c.DueSoon = countUpTo(t.pending, addDuration(now, max(ahead, 0)), maxDueSoon)
		return len(ids) > 0, nil
	})
	// Now is read once the claim is on disk, so that a queue holding a
	// message claimed ahead does not add the commit's time to its wait.
	c.Now = fromUnixNano(s.now())
	return c, err
}

// Ack implements store.Store.
func (s *Store) Ack(ctx context.Context, l store.LeaseRef) error {
	return s.writeTxn(ctx, func(t *txn) (bool, error) {
		r, err := t.leased(l)
		if err != nil {
			return false, err
		}
		s.ahead.forget(l.ID)
		return true, t.delete(l.ID, r)
	})
}

// Retry implements store.Store. A dead message's write also trims the
// dead letters to p.Retention.
func (s *Store) Retry(ctx context.Context, p store.RetryParams) error {
	id := p.Lease.ID
	return s.writeTxn(ctx, func(t *txn) (bool, error) {
		r, err := t.leased(p.Lease)
		if err != nil {
			return false, err
		}
		now := s.now()
		if p.Expired && r.key.at() > now {
			return false, store.ErrLeaseLost
		}
		s.ahead.forget(id)
		if p.Error != "" {
			r.lastError = p.Error
		}
		if p.Unhanded && r.attempt > 0 {
			r.attempt-- // not handled: the claim's attempt is taken back
		}
		if err := t.end(id, r, now, p.After, p.Dead); err != nil {
			return false, err
		}
		if p.Dead {
			_, err = t.trimDead(now, p.Retention)
		}
		return true, err
	})
}

// end ends the lease of r: r dies, or is pending again after the delay.
func (t *txn) end(id string, r *record, now int64, after time.Duration, dead bool) error {
	if err := t.remove(r); err != nil {
		return err
	}
	if dead {
		return t.place(id, r, stateDead, now)
	}
	r.due = addDuration(now, max(after, 0))
	return t.place(id, r, statePending, r.due)
}

// Extend implements store.Store.
func (s *Store) Extend(ctx context.Context, p store.ExtendParams) error {
	return s.writeTxn(ctx, func(t *txn) (bool, error) {
		r, err := t.leased(p.Lease)
		if err != nil {
			return false, err
		}
		if err := t.remove(r); err != nil {
			return false, err
		}
		return true, t.place(p.Lease.ID, r, stateInflight, addDuration(s.now(), p.By))
	})
}

// Expired implements store.Store. It only reads.
func (s *Store) Expired(ctx context.Context, limit int) (e store.ExpiredLeases, err error) {
	if err := ctx.Err(); err != nil {
		return store.ExpiredLeases{}, err
	}
	err = s.viewTxn(func(t *txn) error {
		now := s.now()
		keys, ids := due(t.inflight, now, limit)
		for i, id := range ids {
			r, err := t.get(string(id))
			if err != nil {
				return err
			}
			if r == nil || r.state != stateInflight {
				return fmt.Errorf("%w: in-flight index names %q, which is not in flight", ErrCorrupt, id)
			}
			e.Leases = append(e.Leases, store.ExpiredLease{ID: string(id), Token: r.token, Attempt: int(r.attempt),
				Deadline: fromUnixNano(indexKey(keys[i]).at()), Held: s.ahead.holds(string(id), r.token), MaxAttempts: int(r.maxAttempts)})
		}
		e.Now = fromUnixNano(now)
		e.NextDue, e.NextDeadline = t.nextTimes()
		return nil
	})
	return e, err
}

// Requeue implements store.Store.
func (s *Store) Requeue(ctx context.Context, p store.RequeueParams) error {
	id, due := p.ID, p.Due
	return s.writeTxn(ctx, func(t *txn) (bool, error) {
		r, err := t.get(id)
		if err != nil {
			return false, err
		}
		if r == nil || r.state != stateDead {
			return false, fmt.Errorf("%w: no dead message %q", store.ErrNotFound, id)
		}
		if err := t.remove(r); err != nil {
			return false, err
		}
		r.attempt = 0
		r.lastError = ""
		r.due = s.now()
		if !due.IsZero() {
			r.due = store.UnixNano(due)
		}
		return true, t.place(id, r, statePending, r.due)
	})
}

// Stats implements store.Store.
func (s *Store) Stats(ctx context.Context) (st store.Stats, err error) {
	if err := ctx.Err(); err != nil {
		return store.Stats{}, err
	}
	err = s.viewTxn(func(t *txn) error {
		st = store.Stats{Pending: t.counter(statePending), InFlight: t.counter(stateInflight), Dead: t.counter(stateDead)}
		st.NextDue, _ = first(t.pending)
		st.Paused = t.pausedIn()
		return nil
	})
	return st, err
}
