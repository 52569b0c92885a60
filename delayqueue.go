package timingwheel

import "sync"

// delayQueue is a min-heap of bucket expirations (see bucket.exp), one
// entry per armed bucket, not per timer; the driver sleeps until its
// minimum is due. A bucket may appear more than once when its expiration
// moved earlier; the driver skips entries whose expiration no longer
// matches the bucket's (see TimingWheel.pass).
type delayQueue struct {
	mu      sync.Mutex
	entries []delayEntry
	onMin   func() // called when the minimum moves earlier: it wakes the driver
}

type delayEntry struct {
	exp int64
	b   *bucket
}

// push adds b due at exp and wakes the driver if exp is the new minimum.
func (q *delayQueue) push(exp int64, b *bucket) {
	q.mu.Lock()
	q.entries = append(q.entries, delayEntry{exp, b})
	q.up(len(q.entries) - 1)
	isMin := q.entries[0].b == b && q.entries[0].exp == exp
	q.mu.Unlock()
	if isMin {
		q.onMin()
	}
}

// popDue removes and returns the earliest entry if it is due at now.
func (q *delayQueue) popDue(now int64) (delayEntry, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.entries) == 0 || q.entries[0].exp > now {
		return delayEntry{}, false
	}
	e := q.entries[0]
	last := len(q.entries) - 1
	q.entries[0], q.entries[last] = q.entries[last], delayEntry{}
	q.entries = q.entries[:last]
	q.down(0)
	return e, true
}

// peek returns the earliest expiration.
func (q *delayQueue) peek() (int64, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.entries) == 0 {
		return 0, false
	}
	return q.entries[0].exp, true
}

func (q *delayQueue) up(i int) {
	e := q.entries
	for i > 0 {
		p := (i - 1) / 2
		if e[p].exp <= e[i].exp {
			return
		}
		e[p], e[i] = e[i], e[p]
		i = p
	}
}

func (q *delayQueue) down(i int) {
	e := q.entries
	n := len(e)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && e[r].exp < e[l].exp {
			m = r
		}
		if e[i].exp <= e[m].exp {
			return
		}
		e[i], e[m] = e[m], e[i]
		i = m
	}
}
