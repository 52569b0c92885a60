// Package pgtest starts PostgreSQL servers for the tests that need one,
// with the policy every such test follows: initdb and pg_ctl from
// /usr/lib/postgresql/*/bin (or PATH), a temporary directory, a unix
// socket only; as the user postgres when run as root, since PostgreSQL
// refuses to run as root; skip with a message when the binaries are
// absent, unless REQUIRE_POSTGRES=1 (as in CI), which makes that a
// failure.
package pgtest

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// ErrNoPostgres is returned by Start when it finds no PostgreSQL
// binaries.
var ErrNoPostgres = errors.New("no PostgreSQL binaries (initdb, pg_ctl) in /usr/lib/postgresql/*/bin nor in PATH")

// A Server is a PostgreSQL server the tests started, in a temporary
// directory, listening on a unix socket only. PostgreSQL refuses to run as
// root: as root, the server runs as the user postgres (with runuser),
// which owns the directory.
type Server struct {
	bin     string // the directory of initdb and pg_ctl
	dir     string // the temporary directory: data, sock, postgres.log
	runAs   string // the user to run the server as, or "" for ourselves
	durable bool   // fsync on (see Options)
}

// Options are how StartWith starts a server.
type Options struct {
	// Durable runs the server as users run it: fsync and
	// synchronous_commit on (PostgreSQL's defaults), so that each commit
	// waits for its WAL to reach the disk. Without it, fsync is off: a
	// crash of the server loses nothing committed, a crash of the machine
	// may; tests run faster so.
	Durable bool
}

// findPostgres returns the directory of initdb and pg_ctl: the newest
// version under /usr/lib/postgresql, or else the one in PATH.
func findPostgres() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	version := func(dir string) int {
		v, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
		return v
	}
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	for _, dir := range dirs {
		if isFile(filepath.Join(dir, "initdb")) && isFile(filepath.Join(dir, "pg_ctl")) {
			return dir, nil
		}
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil && isFile(filepath.Join(filepath.Dir(p), "initdb")) {
		return filepath.Dir(p), nil
	}
	return "", ErrNoPostgres
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir()
}

// Start makes a new cluster in a temporary directory and starts
// it. The caller stops it (Stop) and removes it (Remove); a test can use
// ForTest, which does both.
func Start() (*Server, error) { return StartWith(Options{}) }

// StartWith is Start with o.
func StartWith(o Options) (*Server, error) {
	bin, err := findPostgres()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("/tmp", "pgstore-")
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, dir: dir, durable: o.Durable}
	if err := s.init(); err != nil {
		s.Remove()
		return nil, err
	}
	if err := s.StartAgain(); err != nil {
		s.Remove()
		return nil, err
	}
	return s, nil
}

func (s *Server) data() string    { return filepath.Join(s.dir, "data") }
func (s *Server) sock() string    { return filepath.Join(s.dir, "sock") }
func (s *Server) logFile() string { return filepath.Join(s.dir, "postgres.log") }

// init makes the directories, hands them to the postgres user if we are
// root, and runs initdb.
func (s *Server) init() error {
	if err := os.Mkdir(s.sock(), 0o700); err != nil {
		return err
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return fmt.Errorf("running as root, PostgreSQL needs the user postgres: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		err = filepath.Walk(s.dir, func(path string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(path, uid, gid)
		})
		if err != nil {
			return err
		}
		s.runAs = "postgres"
	}
	out, err := s.command("initdb", "-D", s.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8",
		"--locale=C", "--no-sync").CombinedOutput()
	if err != nil {
		return fmt.Errorf("initdb: %v\n%s", err, out)
	}
	return nil
}

// command is the command of the PostgreSQL program name, run as the
// server's user, in its directory.
func (s *Server) command(name string, args ...string) *exec.Cmd {
	path := filepath.Join(s.bin, name)
	var cmd *exec.Cmd
	if s.runAs != "" {
		cmd = exec.Command("runuser", append([]string{"-u", s.runAs, "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	cmd.Dir = s.dir
	return cmd
}

// StartAgain starts the server again after Stop (Start runs it first), and
// waits until it accepts connections: on a
// unix socket in sock, no TCP, without fsync unless Options.Durable (a
// crash of the machine would lose data; a crash of the server loses
// nothing committed).
func (s *Server) StartAgain() error {
	fsync := "off"
	if s.durable {
		fsync = "on"
	}
	opts := fmt.Sprintf("-k %s -c listen_addresses='' -c fsync=%s -c synchronous_commit=on -c max_connections=300", s.sock(), fsync)
	out, err := s.command("pg_ctl", "-D", s.data(), "-l", s.logFile(), "-w", "-t", "60", "-o", opts, "start").CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl start: %v\n%s%s", err, out, s.logTail())
	}
	return nil
}

// Stop stops the server in mode "fast" (a clean shutdown that ends the
// sessions), "smart" or "immediate" (as a crash would: recovery at the
// next start).
func (s *Server) Stop(mode string) error {
	out, err := s.command("pg_ctl", "-D", s.data(), "-m", mode, "-w", "-t", "60", "stop").CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl stop -m %s: %v\n%s", mode, err, out)
	}
	return nil
}

// Restart stops the server in mode and starts it again, on the same
// socket and data.
func (s *Server) Restart(mode string) error {
	if err := s.Stop(mode); err != nil {
		return err
	}
	return s.StartAgain()
}

// Remove deletes the server's directory; stop it first.
func (s *Server) Remove() { _ = os.RemoveAll(s.dir) }

// ConnString is the connection string of the database postgres.
func (s *Server) ConnString() string {
	return fmt.Sprintf("host=%s user=postgres dbname=postgres", s.sock())
}

// URL is the database postgres as a postgres:// URL, for programs that
// take one (twbench's -store).
func (s *Server) URL() string {
	return "postgres:///postgres?host=" + url.QueryEscape(s.sock()) + "&user=postgres"
}

func (s *Server) logTail() string {
	b, _ := os.ReadFile(s.logFile())
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return "\npostgres.log:\n" + strings.Join(lines, "\n")
}

// SkipIfAbsent skips t with a message if err, of Start or StartWith,
// says there are no PostgreSQL binaries, unless REQUIRE_POSTGRES=1: then
// the caller fails on err as on any other.
func SkipIfAbsent(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, ErrNoPostgres) && os.Getenv("REQUIRE_POSTGRES") != "1" {
		t.Skipf("%v: skipping (apt-get install postgresql, or set REQUIRE_POSTGRES=1 to fail instead)", err)
	}
}

// ForTest starts a server for t, stopped and removed when t ends. Without
// PostgreSQL binaries it skips t with a message, or fails it if
// REQUIRE_POSTGRES=1.
func ForTest(t testing.TB) *Server {
	t.Helper()
	srv, err := Start()
	SkipIfAbsent(t, err)
	if err != nil {
		t.Fatalf("starting PostgreSQL: %v", err)
	}
	t.Cleanup(func() {
		_ = srv.Stop("immediate")
		srv.Remove()
	})
	return srv
}

// Pids returns the process IDs of the running server: the postmaster
// (from postmaster.pid) and its children (the backends, the checkpointer,
// ...), read from /proc. Linux only.
func (s *Server) Pids() ([]int, error) {
	b, err := os.ReadFile(filepath.Join(s.data(), "postmaster.pid"))
	if err != nil {
		return nil, err
	}
	first, _, _ := strings.Cut(string(b), "\n")
	master, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		return nil, fmt.Errorf("postmaster.pid: %w", err)
	}
	pids := []int{master}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after
		// the last ')'.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid == master {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
