package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "127.1.2.3:80": true, "[::1]:8080": true, "localhost:0": true,
		":8080": false, "0.0.0.0:8080": false, "[::]:8080": false, "192.168.1.4:80": false, "example.com:80": false,
	} {
		got, err := isLoopback(addr)
		require.NoError(t, err, addr)
		assert.Equal(t, want, got, addr)
	}
	_, err := isLoopback("8080")
	assert.Error(t, err)
}

func TestServeUsage(t *testing.T) {
	q := filepath.Join(t.TempDir(), "q.db")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{q, "serve", "-addr", ":8080"}, "-addr :8080 is not a loopback address: give -auth-file"},
		{[]string{q, "serve", "-addr", "0.0.0.0:80"}, "not a loopback address"},
		{[]string{q, "serve", "-addr", "nonsense"}, `serve: -addr "nonsense"`},
		{[]string{q, "serve", "extra"}, `serve: unexpected argument "extra"`},
		{[]string{q, "serve", "-max-attempts", "0"}, "-max-attempts must be at least 1"},
	} {
		twq(t, c.args...).failed(t, exitUsage, c.want)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	twq(t, q, "serve", "-auth-file", empty).failed(t, exitError, "is empty")
	twq(t, q, "serve", "-auth-file", filepath.Join(t.TempDir(), "none")).failed(t, exitError, "reading -auth-file")
	half := filepath.Join(t.TempDir(), "half")
	require.NoError(t, os.WriteFile(half, []byte("admin:\n"), 0o600))
	twq(t, q, "serve", "-auth-file", half).failed(t, exitError, "give both a user and a password")
}

func TestCredentials(t *testing.T) {
	dir := t.TempDir()
	basic, bearer := filepath.Join(dir, "basic"), filepath.Join(dir, "bearer")
	require.NoError(t, os.WriteFile(basic, []byte("admin:s3cret:with-colon\n"), 0o600))
	require.NoError(t, os.WriteFile(bearer, []byte("  tok3n \n"), 0o600))
	cb, err := readAuthFile(basic)
	require.NoError(t, err)
	ct, err := readAuthFile(bearer)
	require.NoError(t, err)
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })

	req := func(set func(r *http.Request)) *http.Request {
		r, err := http.NewRequest(http.MethodGet, "http://x/", nil)
		require.NoError(t, err)
		set(r)
		return r
	}
	for _, c := range []struct {
		name string
		cred *credentials
		r    *http.Request
		want int
	}{
		{"basic", cb, req(func(r *http.Request) { r.SetBasicAuth("admin", "s3cret:with-colon") }), http.StatusTeapot},
		{"basic, wrong password", cb, req(func(r *http.Request) { r.SetBasicAuth("admin", "s3cret") }), http.StatusUnauthorized},
		{"basic, wrong user", cb, req(func(r *http.Request) { r.SetBasicAuth("root", "s3cret:with-colon") }), http.StatusUnauthorized},
		{"basic, none", cb, req(func(*http.Request) {}), http.StatusUnauthorized},
		{"bearer", ct, req(func(r *http.Request) { r.Header.Set("Authorization", "Bearer tok3n") }), http.StatusTeapot},
		{"bearer, wrong", ct, req(func(r *http.Request) { r.Header.Set("Authorization", "Bearer tok3") }), http.StatusUnauthorized},
		{"bearer, as basic", ct, req(func(r *http.Request) { r.SetBasicAuth("tok3n", "") }), http.StatusUnauthorized},
	} {
		w := &responseRecorder{header: http.Header{}}
		lim := newLoginLimiter(slog.New(slog.DiscardHandler))
		lim.sleep = func(context.Context, time.Duration) {}
		c.cred.require(lim, ok).ServeHTTP(w, c.r)
		assert.Equal(t, c.want, w.code, c.name)
		if c.want == http.StatusUnauthorized {
			assert.NotEmpty(t, w.header.Get("WWW-Authenticate"), c.name)
		}
	}
}

type responseRecorder struct {
	header http.Header
	code   int
}

func (r *responseRecorder) Header() http.Header         { return r.header }
func (r *responseRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (r *responseRecorder) WriteHeader(code int)        { r.code = code }

// syncBuffer is a stdout that the test reads while twq writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serving runs twq with args (a serve command) in this process, and
// returns the dashboard's URL and a func that stops twq and returns its
// result.
func serving(t *testing.T, args ...string) (string, func() result) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	saved := serveContext
	serveContext = func(parent context.Context) (context.Context, context.CancelFunc) {
		return context.WithCancel(ctx)
	}
	t.Cleanup(func() { serveContext = saved })
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(args, strings.NewReader(""), &out, &errOut) }()
	stop := func() result {
		cancel()
		code := <-done
		return result{code: code, stdout: out.String(), stderr: errOut.String()}
	}
	var u string
	require.Eventually(t, func() bool {
		select {
		case code := <-done:
			done <- code
			return true
		default:
		}
		m := regexp.MustCompile(`at (http://\S+/)`).FindStringSubmatch(out.String())
		if m != nil {
			u = m[1]
		}
		return m != nil
	}, 10*time.Second, 5*time.Millisecond)
	if u == "" {
		r := stop()
		t.Fatalf("twq serve ended: %+v", r)
	}
	return u, stop
}

func fetch(t *testing.T, method, u string, form url.Values, set func(*http.Request)) (int, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	require.NoError(t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if set != nil {
		set(req)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func TestServeFile(t *testing.T) {
	b := newFileBackend(t)
	u, stop := serving(t, b.queue, "serve", "-addr", "127.0.0.1:0")
	assert.True(t, strings.HasPrefix(u, "http://127.0.0.1:"), u)

	code, body := fetch(t, http.MethodGet, u, nil, nil)
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `data-stat="pending">2<`)
	assert.Contains(t, body, `data-stat="dead">1<`)
	code, body = fetch(t, http.MethodGet, u+"dead", nil, nil)
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "card declined")
	tok := regexp.MustCompile(`name="token" value="([0-9a-f]+)"`).FindStringSubmatch(body)
	require.NotNil(t, tok)

	// Refused from another site; done from the dashboard's own page.
	code, _ = fetch(t, http.MethodPost, u+"requeue", url.Values{"id": {"d1"}, "token": {tok[1]}},
		func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") })
	assert.Equal(t, http.StatusForbidden, code)
	code, _ = fetch(t, http.MethodPost, u+"requeue", url.Values{"id": {"d1"}},
		func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "same-origin") })
	assert.Equal(t, http.StatusForbidden, code, "no token")
	code, _ = fetch(t, http.MethodPost, u+"requeue", url.Values{"id": {"d1"}, "token": {tok[1]}},
		func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "same-origin") })
	assert.Equal(t, http.StatusSeeOther, code)

	// The file is not held while twq serves, between requests.
	twq(t, b.queue, "cancel", "p1").ok(t)

	r := stop()
	require.Equal(t, exitOK, r.code, r.stderr)
	// Each action is logged, done or refused, with the remote address.
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	require.Len(t, lines, 3, r.stderr)
	assert.Regexp(t, `level=WARN msg="twq serve: action refused or failed" action=/requeue status=403 remote=127\.0\.0\.1:\d+ user="\(no -auth-file\)"$`, lines[0])
	assert.Regexp(t, `level=INFO msg="twq serve: action done" action=/requeue status=303 remote=127\.0\.0\.1:\d+ user="\(no -auth-file\)" id=d1$`, lines[2])
	s, closeStore := b.store(t)
	defer closeStore()
	st, err := s.Stats(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 0, st.Dead, "d1 was requeued")
	assert.Equal(t, 2, st.Pending, "p1 was cancelled, d1 requeued")
}

func TestServeReadOnlyWithAuth(t *testing.T) {
	b := newFileBackend(t)
	auth := filepath.Join(t.TempDir(), "auth")
	require.NoError(t, os.WriteFile(auth, []byte("admin:pw\n"), 0o600))
	u, stop := serving(t, b.queue, "serve", "-read-only", "-addr", "127.0.0.1:0", "-auth-file", auth)
	defer func() { require.Equal(t, exitOK, stop().code) }()

	code, _ := fetch(t, http.MethodGet, u, nil, nil)
	assert.Equal(t, http.StatusUnauthorized, code)
	login := func(r *http.Request) { r.SetBasicAuth("admin", "pw") }
	code, body := fetch(t, http.MethodGet, u+"dead", nil, login)
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "d1")
	assert.NotContains(t, body, `method="post"`)
	code, _ = fetch(t, http.MethodPost, u+"requeue", url.Values{"id": {"d1"}}, login)
	assert.Equal(t, http.StatusForbidden, code)
}

func TestServeRefusesAnAddressInUse(t *testing.T) {
	b := newFileBackend(t)
	u, stop := serving(t, b.queue, "serve", "-addr", "127.0.0.1:0")
	defer stop()
	addr := strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/")
	b2 := newFileBackend(t)
	twq(t, b2.queue, "serve", "-addr", addr).failed(t, exitError, "address already in use")
	_, closeStore := b2.store(t) // it let go of the file
	closeStore()
}

func TestServeEachBackend(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		u, stop := serving(t, b.queue, "serve", "-addr", "127.0.0.1:0", "-read-only")
		code, body := fetch(t, http.MethodGet, u+"pending", nil, nil)
		assert.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, `href="message?id=p1"`)
		code, body = fetch(t, http.MethodGet, u+"message?id=d1", nil, nil)
		assert.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, "card declined")
		r := stop()
		require.Equal(t, exitOK, r.code, r.stderr)
	})
}
