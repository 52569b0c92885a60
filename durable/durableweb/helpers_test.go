package durableweb

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/memstore"
)

// newQueue returns a queue on a memstore, closed at the end of the test.
func newQueue(t *testing.T, opts ...durable.Option) *durable.Queue {
	t.Helper()
	q, err := durable.New(memstore.New(nil), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, q.Close()) })
	return q
}

// newDashboard returns the dashboard of q served under /queue/ by a test
// server, both closed at the end of the test.
func newDashboard(t *testing.T, q *durable.Queue, opts ...Option) (*Dashboard, *httptest.Server) {
	t.Helper()
	d := New(q, opts...)
	mux := http.NewServeMux()
	mux.Handle("/queue/", http.StripPrefix("/queue", d))
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.Close()
		require.NoError(t, d.Close())
	})
	return d, srv
}

// kill makes the message id dead with the error text cause: q must have
// WithMaxAttempts(1), and id must be the only message due.
func kill(t *testing.T, q *durable.Queue, id string, cause string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, q.Enqueue(ctx, durable.Message{ID: id, Payload: []byte("payload of " + id)}))
	d, err := q.Receive(ctx)
	require.NoError(t, err)
	require.Equal(t, id, d.ID)
	require.NoError(t, d.RetryWithError(ctx, time.Millisecond, errors.New(cause)))
	info, err := q.Get(ctx, id)
	require.NoError(t, err)
	require.Equal(t, durable.Dead, info.State)
}

// noRedirects is a client that returns redirects instead of following
// them.
func noRedirects() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// get fetches path under srv and returns the response's status and body.
func get(t *testing.T, srv *httptest.Server, path string) (*http.Response, string) {
	t.Helper()
	resp, err := noRedirects().Get(srv.URL + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

// post posts form to path under srv with the extra headers.
func post(t *testing.T, srv *httptest.Server, path string, form url.Values, headers map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := noRedirects().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}
