package main

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHostCheck(t *testing.T) {
	c, err := newHostCheck("127.0.0.1:8080", []string{"dash.example", "proxy.example:9000", "[fe80::1]"})
	require.NoError(t, err)
	for host, want := range map[string]bool{
		"127.0.0.1:8080": true, "localhost:8080": true, "LOCALHOST:8080": true, "[::1]:8080": true,
		"dash.example": true, "dash.example:443": true, "DASH.example:8080": true,
		"proxy.example:9000": true, "[fe80::1]:8080": true,
		"evil.example:8080": false, "evil.example": false, "localhost:8081": false, "127.0.0.1": false,
		"proxy.example:9001": false, "proxy.example": false, "": false, "10.0.0.1:8080": false,
		"localhost.evil.example:8080": false,
	} {
		assert.Equal(t, want, c.allows(host), host)
	}
	every, err := newHostCheck("[::]:8080", nil)
	require.NoError(t, err)
	for host, want := range map[string]bool{
		"192.168.1.4:8080": true, "[2001:db8::1]:8080": true, "localhost:8080": true,
		"192.168.1.4:8081": false, "evil.example:8080": false, "192.168.1.4": false,
	} {
		assert.Equal(t, want, every.allows(host), host)
	}
}

func TestAllowHostFlag(t *testing.T) {
	var f allowHostFlag
	require.NoError(t, f.Set("a.example, B.example:8080"))
	require.NoError(t, f.Set("c.example"))
	assert.Equal(t, allowHostFlag{"a.example", "b.example:8080", "c.example"}, f)
	assert.Error(t, f.Set("a.example,,b"))
	assert.Error(t, f.Set("http://a.example/"))
	q := t.TempDir() + "/q.db"
	twq(t, q, "serve", "-allow-host", "http://x/").failed(t, exitUsage, "-allow-host", "not a host name")
}

// TestServeRefusesOtherHosts runs the twq binary: a page of another site
// that reaches the dashboard by DNS rebinding sends its own name as the
// Host, with a matching Origin, and the form's token it read from the
// page: serve answers 421 and does not pause the queue, unless
// -allow-host names that host.
func TestServeRefusesOtherHosts(t *testing.T) {
	b := newFileBackend(t)
	s := startServe(t, b.queue, "serve", "-addr", "127.0.0.1:0")
	port := regexp.MustCompile(`:(\d+)/$`).FindStringSubmatch(s.url)[1]

	asEvil := func(r *http.Request) {
		r.Host = "evil.example:" + port
		r.Header.Set("Origin", "http://evil.example:"+port)
		r.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	code, body := fetch(t, http.MethodGet, s.url, nil, asEvil)
	assert.Equal(t, http.StatusMisdirectedRequest, code)
	assert.Contains(t, body, `"evil.example:`+port+`"`)
	assert.NotContains(t, body, "token")

	code, body = fetch(t, http.MethodGet, s.url, nil, nil)
	require.Equal(t, http.StatusOK, code)
	tok := regexp.MustCompile(`name="token" value="([0-9a-f]+)"`).FindStringSubmatch(body)
	require.NotNil(t, tok)
	code, _ = fetch(t, http.MethodPost, s.url+"pause", url.Values{"token": {tok[1]}}, asEvil)
	assert.Equal(t, http.StatusMisdirectedRequest, code)
	// The loopback names with the port are the dashboard's.
	for _, host := range []string{"localhost:" + port, "[::1]:" + port} {
		code, _ = fetch(t, http.MethodGet, s.url, nil, func(r *http.Request) { r.Host = host })
		assert.Equal(t, http.StatusOK, code, host)
	}
	s.stop(t)
	assert.False(t, b.stats(t).Paused, "the request for evil.example did not pause the queue")

	s = startServe(t, b.queue, "serve", "-addr", "127.0.0.1:0", "-allow-host", "other.example,evil.example")
	port = regexp.MustCompile(`:(\d+)/$`).FindStringSubmatch(s.url)[1]
	code, body = fetch(t, http.MethodGet, s.url, nil, asEvil)
	require.Equal(t, http.StatusOK, code)
	tok = regexp.MustCompile(`name="token" value="([0-9a-f]+)"`).FindStringSubmatch(body)
	require.NotNil(t, tok)
	code, _ = fetch(t, http.MethodPost, s.url+"pause", url.Values{"token": {tok[1]}}, asEvil)
	assert.Equal(t, http.StatusSeeOther, code, "-allow-host evil.example allows it")
	s.stop(t)
	assert.True(t, b.stats(t).Paused)
	assert.False(t, strings.Contains(s.stderr.String(), "panic"))
}
