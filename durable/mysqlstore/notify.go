package mysqlstore

import (
	"context"
	"database/sql"
	"sync"
	"time"
)

// Wake-ups (store.Notifier) without LISTEN/NOTIFY: see the package doc's
// Wake-ups. A store's subscribers are woken at once by the writes of the
// other stores of the same *sql.DB and queue in this process, and by a
// poll of the earliest due time and the paused flag, which runs while the
// store has subscribers.

// pollSQL reads the position (due time, seq) of the queue's earliest
// pending message (an index lookup) and whether the queue is paused.
// queue, queue
const pollSQL = `SELECT p.us, p.seq, EXISTS (SELECT 1 FROM {Q} WHERE queue = ? AND paused = 1)
FROM (SELECT 1) one LEFT JOIN (SELECT US(ts) AS us, seq FROM {T} WHERE queue = ? AND state = 1 ORDER BY ts, seq LIMIT 1) p ON 1 = 1`

// notifier is a store's subscribers and its poll.
type notifier struct {
	s *Store

	mu     sync.Mutex
	subs   map[chan struct{}]struct{}
	stop   chan struct{} // closed to stop the poll; nil when none runs
	polled chan struct{} // closed when the poll has stopped
	closed bool
}

// A localKey names the stores of one queue on one *sql.DB.
type localKey struct {
	db    *sql.DB
	queue string
}

// local holds the notifiers with subscribers, by queue, in this process.
var local = struct {
	sync.Mutex
	m map[localKey]map[*notifier]struct{}
}{m: map[localKey]map[*notifier]struct{}{}}

func (n *notifier) init(s *Store) { n.s = s }

func (n *notifier) key() localKey { return localKey{n.s.db, n.s.queue} }

// Wakeups implements store.Notifier: see the package doc's Wake-ups. The
// first call starts the store's poll (unless WithPoll(0)); giving back the
// last channel stops it.
func (s *Store) Wakeups() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	n := &s.wake
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return ch, func() {}
	}
	if n.subs == nil {
		n.subs = map[chan struct{}]struct{}{}
	}
	n.subs[ch] = struct{}{}
	if len(n.subs) == 1 {
		local.Lock()
		if local.m[n.key()] == nil {
			local.m[n.key()] = map[*notifier]struct{}{}
		}
		local.m[n.key()][n] = struct{}{}
		local.Unlock()
		if s.opts.poll > 0 {
			n.stop, n.polled = make(chan struct{}), make(chan struct{})
			go n.poll(n.stop, n.polled)
		}
	}
	var once sync.Once
	return ch, func() { once.Do(func() { n.unsubscribe(ch) }) }
}

// unsubscribe forgets ch, and stops the poll with the last subscriber.
func (n *notifier) unsubscribe(ch chan struct{}) {
	n.mu.Lock()
	delete(n.subs, ch)
	var polled chan struct{}
	if len(n.subs) == 0 {
		polled = n.stopLocked()
	}
	n.mu.Unlock()
	if polled != nil {
		<-polled
	}
}

// stopLocked unregisters n and stops its poll, and returns the channel
// closed when the poll has stopped (nil if none ran).
func (n *notifier) stopLocked() chan struct{} {
	local.Lock()
	if m := local.m[n.key()]; m != nil {
		delete(m, n)
		if len(m) == 0 {
			delete(local.m, n.key())
		}
	}
	local.Unlock()
	polled := n.polled
	if n.stop != nil {
		close(n.stop)
		n.stop, n.polled = nil, nil
	}
	return polled
}

// close forgets every subscriber and stops the poll (Close).
func (n *notifier) close() {
	n.mu.Lock()
	n.closed = true
	n.subs = nil
	polled := n.stopLocked()
	n.mu.Unlock()
	if polled != nil {
		<-polled
	}
}

// wake sends to every subscriber that has no wake-up waiting.
func (n *notifier) wake() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for ch := range n.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// local wakes the subscribers of the other stores of the same *sql.DB and
// queue in this process, after a write that may have made a message due
// earlier than they know (an Enqueue, a Retry, a Requeue, a resume).
func (n *notifier) local() {
	local.Lock()
	var others []*notifier
	for o := range local.m[n.key()] {
		if o != n {
			others = append(others, o)
		}
	}
	local.Unlock()
	for _, o := range others {
		o.wake()
	}
}

// poll reads the earliest pending message's position and the paused flag
// every interval until stop is closed, and wakes the subscribers when the
// earliest pending message is another than the poll saw last (a new
// earliest, or the one after an earliest claimed since, which the queue
// may not know of), when the queue was resumed, at its first reading (what happened before
// it is unknown), and once the database answers again after an error.
func (n *notifier) poll(stop, polled chan struct{}) {
	defer close(polled)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	query := expand(pollSQL)
	var stmt *sql.Stmt // prepared once: one round trip a poll
	defer func() {
		if stmt != nil {
			_ = stmt.Close()
		}
	}()
	t := time.NewTicker(n.s.opts.poll)
	defer t.Stop()
	var (
		failed, started bool
		last            [2]sql.NullInt64 // the earliest pending's due time and seq
		lastPaused      bool
	)
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		var (
			head   [2]sql.NullInt64
			paused bool
			err    error
		)
		if stmt == nil {
			stmt, err = n.s.db.PrepareContext(ctx, query)
		}
		if err == nil {
			err = stmt.QueryRowContext(ctx, n.s.queue, n.s.queue).Scan(&head[0], &head[1], &paused)
		}
		if err != nil {
			failed = true
			continue
		}
		other := head[0].Valid && head != last
		if !started || other || (lastPaused && !paused) || failed {
			n.wake()
		}
		started, failed = true, false
		last, lastPaused = head, paused
	}
}
