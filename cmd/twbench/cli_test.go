package main

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// asMainEnv set to 1 makes the test binary run twbench's main instead of
// the tests, so that these tests meet twbench as a user does: its own
// process, its real stderr (where go-redis would log) and exit status.
const asMainEnv = "TWBENCH_TEST_AS_MAIN"

// TestMain runs main when asMainEnv is set, and the tests otherwise.
func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// cliResult is what one run of the twbench process did.
type cliResult struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

// runCLI runs twbench with args in a process of its own.
func runCLI(t *testing.T, args ...string) cliResult {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), asMainEnv+"=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	code := 0
	if err != nil {
		var exit *exec.ExitError
		require.True(t, errors.As(err, &exit), "running twbench: %v", err)
		code = exit.ExitCode()
	}
	return cliResult{stdout.String(), stderr.String(), code, took}
}

// TestCLIBadFlag checks that a bad flag gives its error and a pointer to
// -h, nothing else, and exit status 2.
func TestCLIBadFlag(t *testing.T) {
	r := runCLI(t, "-foo")
	assert.Equal(t, 2, r.code)
	assert.Empty(t, r.stdout)
	assert.Equal(t, "twbench: flag provided but not defined: -foo\nRun 'twbench -h' for usage.\n", r.stderr)

	r = runCLI(t, "-quick", "nosuch")
	assert.Equal(t, 2, r.code)
	assert.Equal(t, "twbench: unknown scenario \"nosuch\" (known: "+strings.Join(scenarioNames(), ", ")+", all)\nRun 'twbench -h' for usage.\n", r.stderr)
}

// TestCLIHelp checks that -h prints the whole usage on stdout and exits 0.
func TestCLIHelp(t *testing.T) {
	r := runCLI(t, "-h")
	assert.Equal(t, 0, r.code)
	assert.Empty(t, r.stderr)
	assert.True(t, strings.HasPrefix(r.stdout, "Usage: twbench [flags] [scenario ...]\n"), r.stdout)
	assert.Greater(t, strings.Count(r.stdout, "\n"), 40, "the full usage")
	assert.Contains(t, r.stdout, "twbench durable -store redis://localhost:6379/0")
}

// TestCLIStoreUnreachable checks that a -store where no Redis answers is
// refused before anything runs, within 2s, on one line of its own (no
// go-redis log lines), with exit status 1.
func TestCLIStoreUnreachable(t *testing.T) {
	for name, url := range map[string]string{
		"closed port":  "redis://" + closedAddr(t),
		"unknown host": "redis://no-such-host.invalid:6379",
		"silent":       "redis://" + silentServer(t),
		"not redis":    "redis://" + garbageServer(t),
	} {
		t.Run(name, func(t *testing.T) {
			r := runCLI(t, "durable", "-store", url)
			assert.Equal(t, 1, r.code)
			assert.Empty(t, r.stdout, "nothing ran")
			assert.Less(t, r.took, 2*time.Second)
			lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
			require.Len(t, lines, 1, r.stderr)
			assert.True(t, strings.HasPrefix(lines[0], "twbench: -store "+url+": "), lines[0])
		})
	}
}

// TestCLIStoreBadURL checks that a -store URL that does not parse is a
// command-line error.
func TestCLIStoreBadURL(t *testing.T) {
	r := runCLI(t, "durable", "-store", "redis://localhost:6379/notadb")
	assert.Equal(t, 2, r.code)
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	require.Len(t, lines, 2, r.stderr)
	assert.True(t, strings.HasPrefix(lines[0], "twbench: -store: "), lines[0])
	assert.Equal(t, usageHint, lines[1])
}

// closedAddr returns a loopback address where nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// silentServer returns the address of a server that accepts connections
// and never answers, until the test ends.
func silentServer(t *testing.T) string {
	return fakeServer(t, func(net.Conn) {})
}

// garbageServer returns the address of a server that answers every
// connection with something that is not Redis, until the test ends.
func garbageServer(t *testing.T) string {
	return fakeServer(t, func(c net.Conn) { _, _ = c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n")) })
}

// fakeServer serves every connection with serve, keeps it open until the
// test ends, and returns its address.
func fakeServer(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			serve(c)
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return l.Addr().String()
}
