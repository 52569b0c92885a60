package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The twq binary the tests run, built once by twqBinary into binDir, which
// TestMain removes at the end.
var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

// removingBinary runs the tests, then removes the binary built for them
// and stops their PostgreSQL and MariaDB servers.
type removingBinary struct{ m interface{ Run() int } }

func (r removingBinary) Run() int {
	code := r.m.Run()
	stopPostgres()
	stopMySQL()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	return code
}

// twqBinary builds twq once for the test binary's run, and returns its
// path. It skips with -short.
func twqBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary: not with -short")
	}
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "twq-bin-"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "twq")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = &buildError{err: err, out: string(out)}
		}
	})
	require.NoError(t, binErr)
	return binPath
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return "go build: " + e.err.Error() + ": " + e.out }

// A served is a twq serve the test started with the binary.
type served struct {
	url    string // the dashboard's, with a trailing slash
	cmd    *exec.Cmd
	stderr *syncBuffer
}

// startServe runs the twq binary with args (a serve command) and returns
// once it serves. The test's cleanup interrupts it, if the test did not.
func startServe(t *testing.T, args ...string) *served {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	cmd := exec.CommandContext(ctx, twqBinary(t), args...)
	pipe, err := cmd.StdoutPipe()
	require.NoError(t, err)
	s := &served{cmd: cmd, stderr: &syncBuffer{}}
	cmd.Stderr = s.stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Signal(os.Interrupt)
			_ = cmd.Wait()
		}
		cancel()
	})
	lines := bufio.NewReader(pipe)
	line, err := lines.ReadString('\n')
	require.NoError(t, err, "stderr: %s", s.stderr.String())
	go func() { _, _ = io.Copy(io.Discard, lines) }()
	m := regexp.MustCompile(`at (http://\S+/)`).FindStringSubmatch(line)
	require.NotNil(t, m, line)
	s.url = m[1]
	return s
}

// stop interrupts twq serve and waits for it to exit, which must be 0.
func (s *served) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, s.cmd.Process.Signal(os.Interrupt))
	require.NoError(t, s.cmd.Wait(), "stderr: %s", s.stderr.String())
}
