package storetest

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// Inspect checks Get and the fields of Info through a message's life:
// pending, in flight, retried with an error text, reaped, dead and
// requeued, and replaced by an Enqueue. now returns the store's clock and
// advance moves it on (the mock clock's Add, or a sleep for a real one).
func Inspect(t *testing.T, s durable.Store, now func() time.Time, advance func(time.Duration)) {
	ctx := context.Background()
	policy := durable.RetryPolicy{MaxAttempts: 10, Backoff: func(int) time.Duration { return 0 }}

	_, err := s.Get(ctx, "nothing")
	require.ErrorIs(t, err, durable.ErrNotFound)

	due := now().Add(-time.Second).Truncate(time.Microsecond)
	require.NoError(t, s.Enqueue(ctx, []durable.Message{{ID: "m", Payload: []byte("v1"), Due: due}}))
	info, err := s.Get(ctx, "m")
	require.NoError(t, err)
	enqueuedAt := info.EnqueuedAt
	require.False(t, enqueuedAt.IsZero(), "a new message has its EnqueuedAt")
	assert.WithinDuration(t, now(), enqueuedAt, time.Minute)
	assert.Equal(t, utc(durable.Info{ID: "m", Payload: []byte("v1"), State: durable.Pending, Due: due, EnqueuedAt: enqueuedAt}), utc(info))

	advance(2 * time.Millisecond)
	require.NoError(t, s.Enqueue(ctx, []durable.Message{{ID: "m", Payload: []byte("v2"), Due: due}}))
	info, err = s.Get(ctx, "m")
	require.NoError(t, err)
	assert.True(t, enqueuedAt.Equal(info.EnqueuedAt), "an upsert keeps when it was first enqueued: %v, then %v", enqueuedAt, info.EnqueuedAt)
	assert.Equal(t, "v2", string(info.Payload))

	l := claim(t, s, "m", time.Minute)
	assert.Equal(t, "", l.LastError, "no error before the first attempt")
	info, err = s.Get(ctx, "m")
	require.NoError(t, err)
	// With shards on several nodes, a Claim gives its deadlines on one
	// node's clock, Get on the clock of the message's node.
	assert.WithinDuration(t, l.Deadline, info.Deadline, time.Second)
	assert.Equal(t, utc(durable.Info{ID: "m", Payload: []byte("v2"), State: durable.InFlight, Attempt: 1,
		EnqueuedAt: info.EnqueuedAt, Deadline: info.Deadline}), utc(info))
	assert.True(t, enqueuedAt.Equal(info.EnqueuedAt))

	dead, err := s.Retry(ctx, "m", l.Token, 0, 10, "boom: first")
	require.NoError(t, err)
	require.False(t, dead)
	info, err = s.Get(ctx, "m")
	require.NoError(t, err)
	assert.Equal(t, durable.Pending, info.State)
	assert.Equal(t, 1, info.Attempt)
	assert.Equal(t, "boom: first", info.LastError)
	assert.True(t, enqueuedAt.Equal(info.EnqueuedAt), "a retry keeps EnqueuedAt")
	assert.False(t, info.Due.IsZero())
	assert.True(t, info.Deadline.IsZero() && info.DiedAt.IsZero(), "one meaning per field: %+v", info)

	l = claim(t, s, "m", time.Minute)
	assert.Equal(t, "boom: first", l.LastError, "the lease carries the previous attempt's error")
	assert.Equal(t, 2, l.Attempt)
	dead, err = s.Retry(ctx, "m", l.Token, 0, 10, "")
	require.NoError(t, err)
	require.False(t, dead)
	info, err = s.Get(ctx, "m")
	require.NoError(t, err)
	assert.Equal(t, "boom: first", info.LastError, "a retry without a text keeps the one before")

	l = claim(t, s, "m", time.Millisecond)
	advance(5 * time.Millisecond)
	rp, err := s.Reap(ctx, 10, policy)
	require.NoError(t, err)
	require.Equal(t, 1, rp.Returned)
	info, err = s.Get(ctx, "m")
	require.NoError(t, err)
	assert.Equal(t, durable.LeaseExpired, info.LastError, "a reaped lease says so")
	assert.Equal(t, 3, info.Attempt)
	_ = l

	long := strings.Repeat("é", durable.MaxErrorLen) // 2 bytes each
	l = claim(t, s, "m", time.Minute)
	before := now()
	dead, err = s.Retry(ctx, "m", l.Token, 0, 4, long)
	require.NoError(t, err)
	require.True(t, dead)
	info, err = s.Get(ctx, "m")
	require.NoError(t, err)
	assert.Equal(t, durable.Dead, info.State)
	assert.Equal(t, 4, info.Attempt)
	assert.Equal(t, long[:durable.MaxErrorLen], info.LastError, "the text is cut to MaxErrorLen")
	assert.WithinDuration(t, before, info.DiedAt, time.Minute)
	assert.True(t, info.Due.IsZero() && info.Deadline.IsZero(), "%+v", info)
	list, next, err := s.List(ctx, durable.Dead, "", 10)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, utc(info), utc(list[0]), "List and Get agree")
	assert.Empty(t, next)

	require.NoError(t, s.Requeue(ctx, "m", time.Time{}))
	info, err = s.Get(ctx, "m")
	require.NoError(t, err)
	assert.Equal(t, durable.Pending, info.State)
	assert.Zero(t, info.Attempt)
	assert.Empty(t, info.LastError, "a requeued message starts again without an error")
	assert.True(t, enqueuedAt.Equal(info.EnqueuedAt), "Requeue keeps EnqueuedAt")

	found, err := s.Cancel(ctx, "m")
	require.NoError(t, err)
	require.True(t, found)
	_, err = s.Get(ctx, "m")
	require.ErrorIs(t, err, durable.ErrNotFound)

	_, _, err = s.List(ctx, durable.Pending, "garbage", 10)
	require.ErrorIs(t, err, durable.ErrInvalidCursor)
	requireEmpty(t, s)
}

// utc is info with its times in UTC, to compare instants with Equal.
func utc(info durable.Info) durable.Info {
	info.Due, info.EnqueuedAt = info.Due.UTC(), info.EnqueuedAt.UTC()
	info.Deadline, info.DiedAt = info.Deadline.UTC(), info.DiedAt.UTC()
	return info
}

// claim claims the one pending message, which must be id.
func claim(t *testing.T, s durable.Store, id string, lease time.Duration) durable.Lease {
	t.Helper()
	c, err := s.Claim(context.Background(), 1, 0, lease, 0)
	require.NoError(t, err)
	require.Len(t, c.Leases, 1)
	require.Equal(t, id, c.Leases[0].ID)
	return c.Leases[0]
}

// ListPaging enqueues n messages, in a shuffled order, with groups of
// equal due times, and pages through them page at a time in each state:
// pending (while the message each cursor was made from is cancelled, so
// that the next page starts from a position whose message is gone), in
// flight (while another goroutine acks messages), and dead. Each page must
// follow the order of the state, with no message twice, and every message
// that stayed in the state listed. fifo says whether messages of equal
// times keep the order of their writes across the whole list (not so with
// the shards of Redis, where they keep it within a shard).
func ListPaging(t *testing.T, s durable.Store, now func() time.Time, n, page int, fifo bool) {
	ctx := context.Background()
	base := now().Add(-time.Hour).Truncate(time.Microsecond)
	msgs := make([]durable.Message, n)
	for i := range msgs {
		msgs[i] = durable.Message{ID: fmt.Sprintf("msg%05d", i), Due: base.Add(time.Duration(i/10) * time.Millisecond)}
	}
	rand.Shuffle(n, func(i, j int) { msgs[i], msgs[j] = msgs[j], msgs[i] })
	require.NoError(t, s.Enqueue(ctx, msgs))
	// Equal due times keep the order of the Enqueue.
	dueOf := map[string]time.Time{}
	for _, m := range msgs {
		dueOf[m.ID] = m.Due
	}
	want := slices.Clone(msgs)
	slices.SortStableFunc(want, func(a, b durable.Message) int { return a.Due.Compare(b.Due) })

	t.Run("Pending", func(t *testing.T) {
		var got []string
		cancelled := map[string]bool{}
		cursor := ""
		for {
			infos, next, err := s.List(ctx, durable.Pending, cursor, page)
			require.NoError(t, err)
			require.LessOrEqual(t, len(infos), page)
			for _, info := range infos {
				require.Equal(t, durable.Pending, info.State)
				got = append(got, info.ID)
			}
			if next == "" {
				break
			}
			require.Len(t, infos, page, "a page before the last is full")
			_, _, err = s.List(ctx, durable.Dead, next, page)
			require.ErrorIs(t, err, durable.ErrInvalidCursor, "a cursor of another state")
			// The message the cursor was made from goes away.
			last := infos[len(infos)-1].ID
			found, err := s.Cancel(ctx, last)
			require.NoError(t, err)
			require.True(t, found)
			cancelled[last] = true
			cursor = next
		}
		var wantIDs []string
		for _, m := range want {
			wantIDs = append(wantIDs, m.ID)
		}
		if !fifo {
			require.True(t, slices.IsSortedFunc(got, func(a, b string) int { return dueOf[a].Compare(dueOf[b]) }), "by due time")
			slices.Sort(got)
			slices.Sort(wantIDs)
		}
		require.Equal(t, wantIDs, got, "every pending message once, by due time then enqueue order")
		// Put the cancelled ones back, for the next states.
		var back []durable.Message
		for _, m := range msgs {
			if cancelled[m.ID] {
				back = append(back, m)
			}
		}
		require.NoError(t, s.Enqueue(ctx, back))
	})

	var leases []durable.Lease
	for len(leases) < n {
		c, err := s.Claim(ctx, 500, 0, time.Hour, 0)
		require.NoError(t, err)
		require.NotEmpty(t, c.Leases)
		leases = append(leases, c.Leases...)
	}

	t.Run("InFlightWhileAcking", func(t *testing.T) {
		// Acks run while the pages are read: messages acked may or may not
		// be listed, the others must be, once, in order of deadline.
		toAck := map[string]bool{}
		var acked []durable.Lease
		for _, l := range leases {
			if rand.IntN(3) == 0 {
				toAck[l.ID] = true
				acked = append(acked, l)
			}
		}
		var wg sync.WaitGroup
		wg.Go(func() {
			for _, l := range acked {
				assert.NoError(t, s.Ack(ctx, l.ID, l.Token))
			}
		})
		seen := map[string]bool{}
		var infos []durable.Info
		cursor := ""
		for {
			p, next, err := s.List(ctx, durable.InFlight, cursor, page)
			require.NoError(t, err)
			for _, info := range p {
				require.False(t, seen[info.ID], "%s listed twice", info.ID)
				seen[info.ID] = true
				require.Equal(t, durable.InFlight, info.State)
				require.False(t, info.Deadline.IsZero())
			}
			infos = append(infos, p...)
			if next == "" {
				break
			}
			cursor = next
		}
		wg.Wait()
		require.True(t, slices.IsSortedFunc(infos, func(a, b durable.Info) int { return a.Deadline.Compare(b.Deadline) }),
			"in flight by lease deadline")
		kept := leases[:0:0]
		for _, l := range leases {
			if !toAck[l.ID] {
				require.True(t, seen[l.ID], "%s stayed in flight and was not listed", l.ID)
				kept = append(kept, l)
			}
		}
		leases = kept
	})

	t.Run("Dead", func(t *testing.T) {
		for _, l := range leases {
			dead, err := s.Retry(ctx, l.ID, l.Token, 0, 1, "died "+l.ID)
			require.NoError(t, err)
			require.True(t, dead)
		}
		var got []durable.Info
		cursor := ""
		for {
			p, next, err := s.List(ctx, durable.Dead, cursor, page)
			require.NoError(t, err)
			got = append(got, p...)
			if next == "" {
				break
			}
			cursor = next
		}
		require.Len(t, got, len(leases))
		byID := map[string]bool{}
		for i, info := range got {
			if fifo {
				require.Equal(t, leases[i].ID, info.ID, "dead in the order they died")
			}
			require.False(t, byID[info.ID], "%s listed twice", info.ID)
			byID[info.ID] = true
			require.Equal(t, "died "+info.ID, info.LastError)
			require.False(t, info.DiedAt.IsZero())
		}
		require.True(t, slices.IsSortedFunc(got, func(a, b durable.Info) int { return cmp.Compare(a.DiedAt.UnixNano(), b.DiedAt.UnixNano()) }))
		for _, info := range got {
			found, err := s.Cancel(ctx, info.ID)
			require.NoError(t, err)
			require.True(t, found)
		}
	})
	requireEmpty(t, s)
}
