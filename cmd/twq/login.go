package main

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// loginDelay is how long a failed login holds its remote address's gate
// (see loginLimiter): from one address, at most one wrong guess is
// checked per loginDelay. Tests shorten it.
var loginDelay = time.Second

// maxLoginWaiting is how many requests of one remote address may wait for
// its gate: beyond, they get 429 Too Many Requests, their credentials
// unchecked.
const maxLoginWaiting = 32

// A loginLimiter slows the guessing of -auth-file's credentials. The
// requests of one remote address (its IP, whatever the port) have their
// credentials checked one at a time, through the address's gate, and a
// wrong one keeps the gate for loginDelay before it is answered 401: N
// wrong guesses from an address take at least N·loginDelay, whether sent
// one after another or all at once (a right guess sent among them waits
// its turn too, so it cannot show itself sooner). A right one lets go of
// the gate at once, so a user's page, its style sheet and its refreshes
// are not slowed. Every failure is logged with the remote address.
type loginLimiter struct {
	delay time.Duration
	// sleep waits for d or until ctx ends; tests replace it.
	sleep func(ctx context.Context, d time.Duration)
	log   *slog.Logger

	mu    sync.Mutex
	gates map[string]*loginGate // by remote IP, while a request holds or waits for it
}

type loginGate struct {
	sem   chan struct{} // holds a token while a request checks
	users int           // requests holding or waiting for the gate
}

func newLoginLimiter(log *slog.Logger) *loginLimiter {
	return &loginLimiter{delay: loginDelay, sleep: sleepContext, log: log, gates: map[string]*loginGate{}}
}

// sleepContext waits for d, or until ctx ends.
func sleepContext(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// remoteIP is the IP of r's remote address, or the address as it is.
func remoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// A loginResult is what check decided.
type loginResult int

const (
	loginOK       loginResult = iota
	loginFailed               // wrong or missing credentials: 401
	loginTooMany              // too many requests waiting: 429, unchecked
	loginCanceled             // the request ended while it waited
)

// check checks r's credentials with allows, through the gate of r's
// remote address.
func (l *loginLimiter) check(r *http.Request, allows func(*http.Request) bool) loginResult {
	ip := remoteIP(r)
	l.mu.Lock()
	g := l.gates[ip]
	if g == nil {
		g = &loginGate{sem: make(chan struct{}, 1)}
		l.gates[ip] = g
	}
	if g.users >= maxLoginWaiting {
		l.mu.Unlock()
		l.log.Warn("twq serve: refused a login unchecked: too many waiting from this address",
			"remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path)
		return loginTooMany
	}
	g.users++
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		if g.users--; g.users == 0 {
			delete(l.gates, ip)
		}
		l.mu.Unlock()
	}()

	select {
	case g.sem <- struct{}{}:
	case <-r.Context().Done():
		return loginCanceled
	}
	defer func() { <-g.sem }()
	if allows(r) {
		return loginOK
	}
	user, _, _ := r.BasicAuth()
	l.log.Warn("twq serve: failed login", "remote", r.RemoteAddr, "user", user,
		"method", r.Method, "path", r.URL.Path, "delay", l.delay)
	l.sleep(r.Context(), l.delay)
	return loginFailed
}
