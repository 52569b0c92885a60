package main

import (
	"bufio"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBinary builds twq and runs it, for the exit codes and streams of the
// real program.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary: not with -short")
	}
	bin := filepath.Join(t.TempDir(), "twq")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	b := newFileBackend(t)

	runBin := func(stdin string, args ...string) (code int, stdout, stderr string) {
		cmd := exec.Command(bin, args...)
		cmd.Stdin = strings.NewReader(stdin)
		var o, e strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), o.String(), e.String()
		}
		require.NoError(t, err)
		return 0, o.String(), e.String()
	}

	code, stdout, stderr := runBin("", b.queue, "stats")
	assert.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "pending")

	code, stdout, _ = runBin("payload from a pipe", "-json", b.queue, "enqueue", "piped", "-payload-file", "-")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, stdout, `"payload_bytes": 19`)

	code, stdout, stderr = runBin("", filepath.Join(t.TempDir(), "none.db"), "stats")
	assert.Equal(t, exitError, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "does not exist")

	code, _, stderr = runBin("")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "twq -h")

	// serve runs until SIGINT, then lets go of the file and exits 0.
	cmd := exec.Command(bin, b.queue, "serve", "-addr", "127.0.0.1:0")
	pipe, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var serveErr strings.Builder
	cmd.Stderr = &serveErr
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(pipe).ReadString('\n')
	require.NoError(t, err, "stderr: %s", serveErr.String())
	m := regexp.MustCompile(`at (http://\S+/)`).FindStringSubmatch(line)
	require.NotNil(t, m, line)
	resp, err := http.Get(m[1])
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	require.NoError(t, cmd.Wait(), "stderr: %s", serveErr.String())
	code, _, stderr = runBin("", b.queue, "stats")
	assert.Equal(t, exitOK, code, stderr)
}
