package main

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
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

// fakeSleeps is a loginLimiter's sleep that records the delays and
// returns at once, or, if hold is set, blocks each sleep until the test
// releases it.
type fakeSleeps struct {
	mu     sync.Mutex
	slept  []time.Duration
	hold   chan struct{} // if not nil, each sleep waits for a value
	asleep chan struct{} // if not nil, gets a value when a sleep starts
}

func (f *fakeSleeps) sleep(ctx context.Context, d time.Duration) {
	f.mu.Lock()
	f.slept = append(f.slept, d)
	f.mu.Unlock()
	if f.asleep != nil {
		f.asleep <- struct{}{}
	}
	if f.hold != nil {
		select {
		case <-f.hold:
		case <-ctx.Done():
		}
	}
}

func (f *fakeSleeps) total() (n int, sum time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, d := range f.slept {
		sum += d
	}
	return len(f.slept), sum
}

// loginServer serves 204 behind the basic auth admin:pw checked by a
// limiter with a fake sleep, logging into the returned buffer.
func loginServer(t *testing.T, f *fakeSleeps) (*httptest.Server, *syncBuffer) {
	t.Helper()
	var logs syncBuffer
	lim := newLoginLimiter(slog.New(slog.NewTextHandler(&logs, nil)))
	lim.delay = time.Second
	lim.sleep = f.sleep
	path := filepath.Join(t.TempDir(), "auth")
	require.NoError(t, os.WriteFile(path, []byte("admin:pw"), 0o600))
	cred, err := readAuthFile(path)
	require.NoError(t, err)
	srv := httptest.NewServer(cred.require(lim, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})))
	t.Cleanup(srv.Close)
	return srv, &logs
}

func basicGet(t *testing.T, u, user, password string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	require.NoError(t, err)
	req.SetBasicAuth(user, password)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp.StatusCode
}

// TestFailedLoginsSlowedAndLogged: each of 50 wrong guesses is logged
// with the remote address and the user tried, and holds the address's
// gate for the delay (1 s here, on a fake sleep): 50 guesses cost 50 s.
// A right login costs nothing.
func TestFailedLoginsSlowedAndLogged(t *testing.T) {
	f := &fakeSleeps{}
	srv, logs := loginServer(t, f)
	for i := range 50 {
		require.Equal(t, http.StatusUnauthorized, basicGet(t, srv.URL, "admin", "guess"+string(rune('a'+i%26))))
	}
	n, sum := f.total()
	assert.Equal(t, 50, n)
	assert.Equal(t, 50*time.Second, sum)
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	require.Len(t, lines, 50)
	assert.Regexp(t, `level=WARN msg="twq serve: failed login" remote=127\.0\.0\.1:\d+ user=admin method=GET path=/ delay=1s$`, lines[0])

	require.Equal(t, http.StatusNoContent, basicGet(t, srv.URL, "admin", "pw"))
	n, _ = f.total()
	assert.Equal(t, 50, n, "a right login is not slowed")
	assert.Len(t, strings.Split(strings.TrimSpace(logs.String()), "\n"), 50, "nor logged")
}

// TestFailedLoginsSlowedAllAtOnce: guesses sent together are checked one
// at a time: while a wrong one sleeps, the next (even the right one)
// waits, so concurrency does not speed guessing up.
func TestFailedLoginsSlowedAllAtOnce(t *testing.T) {
	f := &fakeSleeps{hold: make(chan struct{}), asleep: make(chan struct{}, 10)}
	srv, _ := loginServer(t, f)
	codes := make(chan int, 3)
	go func() { codes <- basicGet(t, srv.URL, "admin", "wrong1") }()
	<-f.asleep // the first wrong guess holds the gate
	go func() { codes <- basicGet(t, srv.URL, "admin", "pw") }()
	go func() { codes <- basicGet(t, srv.URL, "admin", "wrong2") }()
	select {
	case c := <-codes:
		t.Fatalf("a request was answered (%d) while a failed login held the gate", c)
	case <-time.After(100 * time.Millisecond): // a wait for nothing to happen: cannot flake into a pass
	}
	f.hold <- struct{}{} // the first failure's delay ends
	got := []int{<-codes}
	// Then the other wrong guess sleeps in turn, or the right one passed first.
	for len(got) < 3 {
		select {
		case c := <-codes:
			got = append(got, c)
		case <-f.asleep:
			f.hold <- struct{}{}
		}
	}
	assert.ElementsMatch(t, []int{http.StatusUnauthorized, http.StatusUnauthorized, http.StatusNoContent}, got)
}

// TestTooManyWaitingLogins: beyond maxLoginWaiting requests of one
// address waiting, the others get 429 without a check.
func TestTooManyWaitingLogins(t *testing.T) {
	f := &fakeSleeps{hold: make(chan struct{}), asleep: make(chan struct{}, 1)}
	lim := newLoginLimiter(slog.New(slog.DiscardHandler))
	lim.sleep = f.sleep
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr = "192.0.2.1:1234"
	var wg sync.WaitGroup
	results := make(chan loginResult, maxLoginWaiting)
	wg.Add(1)
	go func() { defer wg.Done(); results <- lim.check(req, func(*http.Request) bool { return false }) }()
	<-f.asleep
	for range maxLoginWaiting - 1 {
		wg.Add(1)
		go func() { defer wg.Done(); results <- lim.check(req, func(*http.Request) bool { return true }) }()
	}
	require.Eventually(t, func() bool {
		lim.mu.Lock()
		defer lim.mu.Unlock()
		return lim.gates["192.0.2.1"].users == maxLoginWaiting
	}, 10*time.Second, time.Millisecond)
	assert.Equal(t, loginTooMany, lim.check(req, func(*http.Request) bool { t.Error("checked"); return true }))
	other := httptest.NewRequest(http.MethodGet, "/", nil)
	other.RemoteAddr = "192.0.2.2:1234"
	assert.Equal(t, loginOK, lim.check(other, func(*http.Request) bool { return true }), "another address is not held up")
	close(f.hold)
	wg.Wait()
	close(results)
	assert.Equal(t, loginFailed, <-results)
	for r := range results {
		assert.Equal(t, loginOK, r)
	}
	assert.Empty(t, lim.gates, "the gates are let go")
}

// TestServeLogsLoginsAndActions runs serve with -auth-file and a 20ms
// login delay: 5 wrong logins take at least 5 delays (a lower bound,
// which a slow machine cannot break), each is logged with the remote
// address, and a pause by admin is logged with the user.
func TestServeLogsLoginsAndActions(t *testing.T) {
	saved := loginDelay
	loginDelay = 20 * time.Millisecond
	t.Cleanup(func() { loginDelay = saved })
	b := newFileBackend(t)
	auth := filepath.Join(t.TempDir(), "auth")
	require.NoError(t, os.WriteFile(auth, []byte("admin:pw\n"), 0o600))
	u, stop := serving(t, b.queue, "serve", "-addr", "127.0.0.1:0", "-auth-file", auth)

	start := time.Now()
	for range 5 {
		code, _ := fetch(t, http.MethodGet, u, nil, func(r *http.Request) { r.SetBasicAuth("admin", "nope") })
		require.Equal(t, http.StatusUnauthorized, code)
	}
	assert.GreaterOrEqual(t, time.Since(start), 5*loginDelay)

	login := func(r *http.Request) { r.SetBasicAuth("admin", "pw") }
	code, body := fetch(t, http.MethodGet, u, nil, login)
	require.Equal(t, http.StatusOK, code)
	tok := regexp.MustCompile(`name="token" value="([0-9a-f]+)"`).FindStringSubmatch(body)
	require.NotNil(t, tok)
	code, _ = fetch(t, http.MethodPost, u+"pause", url.Values{"token": {tok[1]}}, login)
	require.Equal(t, http.StatusSeeOther, code)

	r := stop()
	require.Equal(t, exitOK, r.code, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	require.Len(t, lines, 6, r.stderr)
	for _, l := range lines[:5] {
		assert.Regexp(t, `level=WARN msg="twq serve: failed login" remote=127\.0\.0\.1:\d+ user=admin method=GET path=/ delay=20ms$`, l)
	}
	assert.Regexp(t, `level=INFO msg="twq serve: action done" action=/pause status=303 remote=127\.0\.0\.1:\d+ user=admin$`, lines[5])
	assert.True(t, b.stats(t).Paused)
}
