package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// allowHostFlag is -allow-host: names, repeated or comma separated, that a
// request's Host may be besides serve's own address.
type allowHostFlag []string

func (f *allowHostFlag) String() string { return strings.Join(*f, ",") }

func (f *allowHostFlag) Set(s string) error {
	for name := range strings.SplitSeq(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			return fmt.Errorf("an empty name in %q", s)
		}
		if strings.ContainsAny(name, "/ @") {
			return fmt.Errorf("%q is not a host name (give NAME or NAME:PORT, no scheme or path)", name)
		}
		*f = append(*f, strings.ToLower(name))
	}
	return nil
}

// A hostCheck decides which Host headers serve answers. A page of another
// site can reach a dashboard on loopback through DNS rebinding: its own
// name, resolved to 127.0.0.1, with its own origin, which the dashboard's
// same-origin check then takes for the dashboard's. What gives it away is
// the Host header, which carries the attacker's name: so serve answers
// only the Hosts that name it.
type hostCheck struct {
	port string
	// exact are the host:port values accepted: the loopback names and the
	// listening address, with the port, and -allow-host NAME:PORT.
	exact map[string]bool
	// names are the -allow-host NAMEs without a port, accepted with any
	// port or none (a proxy in front of serve sends its own port).
	names map[string]bool
	// anyIP accepts any IP literal with the port: serve listens on every
	// interface, and an IP literal cannot be rebound.
	anyIP bool
}

// newHostCheck returns the check for a server listening at addr (its
// real address, port resolved) with the -allow-host names.
func newHostCheck(addr string, allowed []string) (*hostCheck, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	c := &hostCheck{port: port, exact: map[string]bool{}, names: map[string]bool{}}
	for _, h := range []string{"localhost", "127.0.0.1", "::1", host} {
		c.exact[strings.ToLower(net.JoinHostPort(h, port))] = true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		c.anyIP = true
	}
	for _, a := range allowed {
		if _, _, err := net.SplitHostPort(a); err == nil {
			c.exact[a] = true
		} else {
			c.names[strings.Trim(a, "[]")] = true
		}
	}
	return c, nil
}

// allows reports whether a request with this Host header is for serve.
func (c *hostCheck) allows(hostHeader string) bool {
	h := strings.ToLower(hostHeader)
	if c.exact[h] {
		return true
	}
	name, port, err := net.SplitHostPort(h)
	if err != nil { // no port
		name, port = strings.Trim(h, "[]"), ""
	}
	if c.names[name] {
		return true
	}
	if c.anyIP && port == c.port {
		name, _, _ = strings.Cut(name, "%")
		return net.ParseIP(name) != nil
	}
	return false
}

// require answers 421 Misdirected Request to the requests whose Host it
// does not allow, logging them, and serves the others with h.
func (c *hostCheck) require(log *slog.Logger, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !c.allows(r.Host) {
			log.Warn("twq serve: refused a request for another host", "host", r.Host,
				"remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path)
			http.Error(w, "421 misdirected request: this dashboard does not answer to the host "+
				strconv.Quote(r.Host)+" (twq serve -allow-host NAME allows a name)", http.StatusMisdirectedRequest)
			return
		}
		h.ServeHTTP(w, r)
	})
}
