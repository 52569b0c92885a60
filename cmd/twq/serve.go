package main

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/durableweb"
)

// defaultAddr is where serve listens by default: loopback only.
const defaultAddr = "127.0.0.1:8080"

// serveConfig is serve's parsed command line.
type serveConfig struct {
	addr        string
	readOnly    bool
	maxAttempts int
	auth        *credentials // nil: no authentication (loopback only)
	allowHosts  allowHostFlag
}

func parseServe(name string, args []string, o *options) (action, error) {
	f := newFlagSet(name, o)
	var c serveConfig
	var authFile string
	f.StringVar(&c.addr, "addr", defaultAddr, "the address to listen on")
	f.BoolVar(&c.readOnly, "read-only", false, "serve no actions")
	f.IntVar(&c.maxAttempts, "max-attempts", 10, "the attempts after which an expired lease's message dies, as the service's queue")
	f.StringVar(&authFile, "auth-file", "", "a file holding a bearer token, or user:password for basic auth")
	f.Var(&c.allowHosts, "allow-host", "a Host name (NAME or NAME:PORT) to answer besides the listening address and loopback names; repeatable, or a comma list")
	if _, err := argsExactly(f, args, 0, ""); err != nil {
		return nil, err
	}
	if c.maxAttempts < 1 {
		return nil, usagef("%s: -max-attempts must be at least 1, got %d", name, c.maxAttempts)
	}
	loopback, err := isLoopback(c.addr)
	if err != nil {
		return nil, usagef("%s: -addr %q: %v", name, c.addr, err)
	}
	switch {
	case authFile != "":
		if c.auth, err = readAuthFile(authFile); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	case !loopback:
		return nil, usagef("%s: -addr %s is not a loopback address: give -auth-file to let others reach the dashboard", name, c.addr)
	}
	return func(ctx context.Context, h *handle, p *printer) error { return serve(ctx, h, p, c, o.stderr) }, nil
}

// isLoopback reports whether addr (host:port) listens on loopback only:
// localhost or a loopback IP. An empty host is every interface.
func isLoopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, err
	}
	if host == "localhost" {
		return true, nil
	}
	host, _, _ = strings.Cut(host, "%") // an IPv6 zone
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

// credentials are what -auth-file holds: user:password for basic auth, or
// a bearer token. Only their SHA-256 sums are kept, so that comparing
// them takes the same time whatever their length.
type credentials struct {
	basic          bool
	user, password [sha256.Size]byte // basic
	token          [sha256.Size]byte // bearer
}

// readAuthFile reads the credentials in path: its content without the
// white space around it, "user:password" if it holds a colon, a bearer
// token otherwise.
func readAuthFile(path string) (*credentials, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading -auth-file: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return nil, fmt.Errorf("-auth-file %s is empty: write a bearer token, or user:password, in it", path)
	}
	if user, password, ok := strings.Cut(s, ":"); ok {
		if user == "" || password == "" {
			return nil, fmt.Errorf("-auth-file %s: give both a user and a password (user:password)", path)
		}
		return &credentials{basic: true, user: sha256.Sum256([]byte(user)), password: sha256.Sum256([]byte(password))}, nil
	}
	return &credentials{token: sha256.Sum256([]byte(s))}, nil
}

// allows reports whether r carries the credentials.
func (c *credentials) allows(r *http.Request) bool {
	same := func(want [sha256.Size]byte, got string) int {
		sum := sha256.Sum256([]byte(got))
		return subtle.ConstantTimeCompare(want[:], sum[:])
	}
	if c.basic {
		user, password, ok := r.BasicAuth()
		return ok && same(c.user, user)&same(c.password, password) == 1
	}
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	return ok && strings.EqualFold(scheme, "Bearer") && same(c.token, token) == 1
}

// require serves h to the requests that carry the credentials, checked
// through lim (which slows and logs failures), 401 Unauthorized to the
// others.
func (c *credentials) require(lim *loginLimiter, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch lim.check(r, c.allows) {
		case loginOK:
			h.ServeHTTP(w, r)
		case loginTooMany:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "429 too many failed logins from this address: wait and try again", http.StatusTooManyRequests)
		case loginCanceled:
		default:
			if c.basic {
				w.Header().Set("WWW-Authenticate", `Basic realm="twq", charset="UTF-8"`)
			} else {
				w.Header().Set("WWW-Authenticate", `Bearer realm="twq"`)
			}
			http.Error(w, "401 unauthorized", http.StatusUnauthorized)
		}
	})
}

// userOf names who sent r, for the log: the basic auth user, or what
// authenticated it.
func (c *credentials) userOf(r *http.Request) string {
	switch {
	case c == nil:
		return "(no -auth-file)"
	case c.basic:
		u, _, _ := r.BasicAuth()
		return u
	}
	return "(bearer token)"
}

// serveContext returns the context that ends serve: on SIGINT or SIGTERM.
// Tests replace it.
var serveContext = func(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

// shutdownTimeout is how long serve waits for the requests under way when
// it stops.
const shutdownTimeout = 5 * time.Second

// serve runs a queue on h's store and serves its dashboard on c.addr
// until SIGINT or SIGTERM. It logs to logTo (stderr), with log/slog's
// text format: each action, each failed login, each request refused for
// its Host, with the remote address.
func serve(ctx context.Context, h *handle, p *printer, c serveConfig, logTo io.Writer) error {
	ctx, stop := serveContext(ctx)
	defer stop()
	// A queue reaps the leases that expired, as the service's would: with
	// durable's default back-off, and -max-attempts.
	q, err := durable.New(h.store, durable.WithMaxAttempts(c.maxAttempts))
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer q.Close()
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	var opts []durableweb.Option
	if c.readOnly {
		opts = append(opts, durableweb.ReadOnly())
	}
	dash := durableweb.New(q, opts...)
	defer dash.Close()
	log := slog.New(slog.NewTextHandler(logTo, nil))
	var handler http.Handler = dash
	if lf, ok := h.store.(*lazyFile); ok {
		handler = lf.hold(handler)
	}
	handler = logActions(log, c.auth, handler)
	if c.auth != nil {
		handler = c.auth.require(newLoginLimiter(log), handler)
	}
	hosts, err := newHostCheck(ln.Addr().String(), c.allowHosts)
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("serve: %w", err)
	}
	handler = hosts.require(log, handler)
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	mode := ""
	if c.readOnly {
		mode = " (read-only)"
	}
	if _, err := fmt.Fprintf(p.w, "twq: serving the dashboard at http://%s/%s; Ctrl-C stops\n", ln.Addr(), mode); err != nil {
		_ = srv.Close()
		<-served
		return err
	}
	select {
	case err := <-served: // the listener failed
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	err = srv.Shutdown(sctx)
	if e := <-served; !errors.Is(e, http.ErrServerClosed) && err == nil {
		err = e
	}
	if err != nil {
		return fmt.Errorf("serve: stopping: %w", err)
	}
	return nil
}
