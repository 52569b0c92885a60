package pgstore

import (
	"bufio"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// guidePath is the PostgreSQL guide, which TestGuidePostgres follows.
const guidePath = "../../docs/stores/postgres.md"

// TestGuidePostgres follows docs/stores/postgres.md from a fresh directory
// to a handled timeout, as a reader would: the go commands of its step 1
// (this repository is the clone), the program of its step 2 as main.go,
// built by go build, and its step 3: the program, run against the tests'
// PostgreSQL (a database of its own, as DATABASE_URL) with -timeout 1s,
// prints the order it placed, then "closed unpaid" for that order, and
// exits 0 on Ctrl-C (SIGINT). Then the order's row says closed and the
// queue is empty. A step the test does not know how to follow fails it,
// so that the guide and the test change together.
func TestGuidePostgres(t *testing.T) {
	pool := testPool(t) // skips without PostgreSQL, unless REQUIRE_POSTGRES=1
	if testing.Short() {
		t.Skip("builds and runs the guide's program: not with -short")
	}
	guide, err := os.ReadFile(guidePath)
	require.NoError(t, err)
	steps := guideBlock(t, string(guide), "## 1. ", "sh")
	program := guideBlock(t, string(guide), "## 2. ", "go")
	repo, err := filepath.Abs("../..")
	require.NoError(t, err)

	// Step 1: the module and its go.work, in a directory of their own.
	dir := filepath.Join(t.TempDir(), "shop")
	require.NoError(t, os.Mkdir(dir, 0o755))
	env := goEnv()
	var ran []string
	for _, line := range strings.Split(strings.TrimSpace(steps), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "git clone "), strings.HasPrefix(line, "mkdir shop"):
			// The clone is this repository; the directory is dir.
		case strings.HasPrefix(line, "go "):
			args := strings.Fields(strings.ReplaceAll(line, "../timingwheel", repo))
			cmd := exec.Command("go", args[1:]...)
			cmd.Dir, cmd.Env = dir, env
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "step 1: %s\n%s", line, out)
			ran = append(ran, args[1]+" "+args[2])
		default:
			t.Fatalf("step 1 has a line this test does not follow: %q", line)
		}
	}
	require.Equal(t, []string{"mod init", "work init", "work edit"}, ran, "step 1's go commands")

	// Step 2: the program.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(program), 0o644))
	build := exec.Command("go", "build", "-o", "shop", ".")
	build.Dir, build.Env = dir, env
	out, err := build.CombinedOutput()
	require.NoError(t, err, "step 2: go build\n%s", out)

	// Step 3: run it on a database of its own.
	_, err = pool.Exec(ctx, `CREATE DATABASE guide`)
	require.NoError(t, err)
	u, err := url.Parse(server.URL())
	require.NoError(t, err)
	u.Path = "/guide"
	run := exec.Command(filepath.Join(dir, "shop"), "-timeout", "1s")
	run.Env = append(os.Environ(), "DATABASE_URL="+u.String())
	stdout, err := run.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	run.Stderr = &stderr
	require.NoError(t, run.Start())
	exited := make(chan error, 1)
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- run.Wait()
	}()
	t.Cleanup(func() { _ = run.Process.Kill() })

	next := func(what string) string {
		t.Helper()
		select {
		case line, ok := <-lines:
			require.True(t, ok, "the program exited before it printed %s; stderr:\n%s", what, &stderr)
			return line
		case <-time.After(60 * time.Second):
			t.Fatalf("the program did not print %s within 60s; stderr:\n%s", what, &stderr)
			return ""
		}
	}
	placed := strings.Fields(next("the order it placed"))
	require.True(t, len(placed) >= 2 && placed[0] == "placed", "first line: %q", placed)
	id := placed[1]
	require.Equal(t, "closed unpaid "+id, next("the order it closed"))

	require.NoError(t, run.Process.Signal(syscall.SIGINT))
	select {
	case err := <-exited:
		require.NoError(t, err, "the program's exit on Ctrl-C; stderr:\n%s", &stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("the program did not exit within 30s of Ctrl-C; stderr:\n%s", &stderr)
	}

	// What the guide says happened: the order is closed, the queue empty.
	guideDB, err := pgxpool.New(ctx, u.String())
	require.NoError(t, err)
	defer guideDB.Close()
	var status string
	require.NoError(t, guideDB.QueryRow(ctx, `SELECT status FROM orders WHERE id = $1`, id).Scan(&status))
	require.Equal(t, "closed", status)
	var left int
	require.NoError(t, guideDB.QueryRow(ctx,
		`SELECT count(*) FROM timingwheel_messages WHERE queue = 'order-timeouts'`).Scan(&left))
	require.Zero(t, left, "messages left in the queue")
}

// guideBlock returns the code of the first fenced block of the given
// language in the section of doc whose heading starts with heading.
func guideBlock(t *testing.T, doc, heading, lang string) string {
	t.Helper()
	_, section, ok := strings.Cut(doc, "\n"+heading)
	require.True(t, ok, "the guide has no section %q", heading)
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	_, code, ok := strings.Cut(section, "\n```"+lang+"\n")
	require.True(t, ok, "section %q has no %s block", heading, lang)
	code, _, ok = strings.Cut(code, "\n```\n")
	require.True(t, ok, "section %q: unterminated %s block", heading, lang)
	return code + "\n"
}

// goEnv is the environment of the go commands a reader runs: this one,
// without a GOWORK that would name another workspace than the guide's.
func goEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOWORK=") {
			env = append(env, kv)
		}
	}
	return env
}
