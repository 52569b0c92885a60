package main

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/boltstore"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// TestServeLetsGoOfTheFile runs the twq binary's serve on a queue file:
// while it idles, a service opens the file with durable.Open and works on
// it; meanwhile serve's pages say, within its -timeout, that a service
// holds the file (503); once the service closes, serve answers again and
// shows what the service wrote. twq commands run beside serve too.
func TestServeLetsGoOfTheFile(t *testing.T) {
	b := newFileBackend(t)
	s := startServe(t, "-timeout", "200ms", b.queue, "serve", "-addr", "127.0.0.1:0")
	code, _ := fetch(t, http.MethodGet, s.url, nil, nil)
	require.Equal(t, http.StatusOK, code)

	// The service starts beside serve: durable.Open waits up to its lock
	// timeout (2s by default) for a request or a sample under way.
	q, err := durable.Open(b.queue)
	require.NoError(t, err, "the service opens the file beside twq serve")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, q.Enqueue(ctx, durable.Message{ID: "from-the-service", Due: time.Now().Add(time.Hour)}))

	start := time.Now()
	code, body := fetch(t, http.MethodGet, s.url+"pending", nil, nil)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "held by another process")
	assert.Less(t, time.Since(start), 10*time.Second)
	require.NoError(t, q.Close())

	code, body = fetch(t, http.MethodGet, s.url+"pending", nil, nil)
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "from-the-service")

	twq(t, b.queue, "cancel", "from-the-service").ok(t)
	code, body = fetch(t, http.MethodGet, s.url+"pending", nil, nil)
	require.Equal(t, http.StatusOK, code)
	assert.NotContains(t, body, "from-the-service")
	s.stop(t)
}

// TestLazyFileHoldsWhileUsed: the file is open while a call or a held
// request runs, shared by those under way, and closed after the last.
func TestLazyFileHoldsWhileUsed(t *testing.T) {
	b := newFileBackend(t)
	h, err := openFileLazy(b.queue, 100*time.Millisecond)
	require.NoError(t, err)
	l := h.store.(*lazyFile)
	ctx := context.Background()
	st, err := l.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, st.Dead)
	assert.Nil(t, l.store, "closed after the call")

	_, release, err := l.acquire()
	require.NoError(t, err)
	_, err = boltstore.Open(b.queue, boltstore.WithLockTimeout(50*time.Millisecond))
	require.ErrorIs(t, err, boltstore.ErrLocked, "held while in use")
	info, err := l.Get(ctx, "d1")
	require.NoError(t, err, "a call shares the opening")
	assert.Equal(t, "card declined", info.LastError)
	release()
	release() // a second release is a no-op
	assert.Nil(t, l.store)
	other, err := boltstore.Open(b.queue, boltstore.WithLockTimeout(50*time.Millisecond))
	require.NoError(t, err)

	_, err = l.Stats(ctx)
	require.ErrorContains(t, err, "held by another process")
	require.NoError(t, other.Close())
	_, err = l.Claim(ctx, store.ClaimParams{Limit: 1, Lease: time.Second})
	require.ErrorIs(t, err, errNoClaims)
	h.close()
	_, err = l.Stats(ctx)
	require.ErrorIs(t, err, durable.ErrClosed)
}
