// Package leasetest holds scenarios that the stores on a server (pgstore,
// redisstore) run in their tests of shared round trips: acks and
// confirmations made at the same time, each with its own outcome, and
// large enqueues that do not wait to share one; and DeadIDs, which their
// tests of dead-letter retention share.
package leasetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// AcksAndConfirmsAtOnce enqueues 2n messages to s, which holds no
// other, claims them all held and confirms the first n. Then, all at once,
// it acks those n, confirms the other n, and confirms the first n again
// with the tokens of the other n; started is called just before. It checks
// each call's outcome (nil, nil, ErrLeaseLost) and what is left: the
// acked messages gone, the confirmed ones handed out (in flight, and a
// Cancel of them fails).
func AcksAndConfirmsAtOnce(t *testing.T, s store.Store, n int, started func()) {
	t.Helper()
	ctx := context.Background()
	msgs := make([]store.Message, 2*n)
	for i := range msgs {
		msgs[i] = store.Message{ID: fmt.Sprintf("k%04d", i), Payload: []byte("p")}
	}
	require.NoError(t, s.Enqueue(ctx, msgs))
	var leases []store.Lease
	for len(leases) < 2*n {
		left := 2*n - len(leases)
		c, err := s.Claim(ctx, store.ClaimParams{Limit: left, Held: left, Lease: time.Minute})
		require.NoError(t, err)
		require.NotEmpty(t, c.Leases, "claimed %d of %d", len(leases), 2*n)
		leases = append(leases, c.Leases...)
	}
	toAck, toConfirm := leases[:n], leases[n:]
	for _, l := range toAck {
		require.NoError(t, s.Confirm(ctx, store.ConfirmParams{Lease: store.LeaseRef{ID: l.ID, Token: l.Token}}))
	}

	started()
	var wg sync.WaitGroup
	start := make(chan struct{})
	acked, confirmed, stale := make([]error, n), make([]error, n), make([]error, n)
	for i := range n {
		wg.Go(func() { <-start; acked[i] = s.Ack(ctx, store.LeaseRef{ID: toAck[i].ID, Token: toAck[i].Token}) })
		wg.Go(func() {
			<-start
			confirmed[i] = s.Confirm(ctx, store.ConfirmParams{Lease: store.LeaseRef{ID: toConfirm[i].ID, Token: toConfirm[i].Token}})
		})
		// A token that is current, but for another message.
		wg.Go(func() {
			<-start
			stale[i] = s.Confirm(ctx, store.ConfirmParams{Lease: store.LeaseRef{ID: toAck[i].ID, Token: toConfirm[i].Token}})
		})
	}
	close(start)
	wg.Wait()
	for i := range n {
		require.NoError(t, acked[i], "ack of %s", toAck[i].ID)
		require.NoError(t, confirmed[i], "confirmation of %s", toConfirm[i].ID)
		require.ErrorIs(t, stale[i], store.ErrLeaseLost, "a stale token of %s", toAck[i].ID)
	}
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Zero(t, st.Pending+st.Dead, "nothing pending or dead")
	assert.Equal(t, n, st.InFlight, "the acked are gone, the confirmed in flight")
	for _, l := range toConfirm {
		_, err := s.Cancel(ctx, l.ID)
		require.ErrorIs(t, err, store.ErrInFlight, "%s was handed out", l.ID)
	}
}
