// Package mysqltest starts MariaDB servers for the tests that need one,
// with the policy every such test follows: mariadb-install-db and
// mariadbd from PATH (or /usr/sbin, /usr/bin), a temporary directory, a
// unix socket only, no TCP; as the user mysql when run as root; skip with a
// message when the binaries are absent, unless REQUIRE_MYSQL=1 (as in CI),
// which makes that a failure.
package mysqltest

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrNoMySQL is returned by Start when it finds no MariaDB binaries.
var ErrNoMySQL = errors.New("no MariaDB binaries (mariadb-install-db, mariadbd) in PATH, /usr/sbin nor /usr/bin")

// Required reports whether REQUIRE_MYSQL=1: a test then fails, rather
// than skips, without a server.
func Required() bool { return os.Getenv("REQUIRE_MYSQL") == "1" }

// A Server is a MariaDB server the tests started, in a temporary
// directory, on a unix socket only. As root, it runs as the user mysql,
// which owns the directory.
type Server struct {
	installDB, mariadbd string
	dir                 string // data, mysql.sock, error.log
	runAs               string // "mysql" as root, "" otherwise
	cmd                 *exec.Cmd
	exited              chan struct{} // closed when cmd has exited
}

// find returns the path of the program name, in PATH or in /usr/sbin or
// /usr/bin.
func find(name string) (string, bool) {
	if p, err := exec.LookPath(name); err == nil {
		return p, true
	}
	for _, dir := range []string{"/usr/sbin", "/usr/bin"} {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, true
		}
	}
	return "", false
}

// Start makes a new data directory in a temporary directory, starts a
// server on it and waits until it accepts connections. The caller stops
// it (Stop) and removes it (Remove).
func Start() (*Server, error) {
	installDB, ok1 := find("mariadb-install-db")
	mariadbd, ok2 := find("mariadbd")
	if !ok1 || !ok2 {
		return nil, ErrNoMySQL
	}
	dir, err := os.MkdirTemp("/tmp", "mysqlstore-")
	if err != nil {
		return nil, err
	}
	s := &Server{installDB: installDB, mariadbd: mariadbd, dir: dir}
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
func (s *Server) logFile() string { return filepath.Join(s.dir, "error.log") }

// Socket is the path of the server's unix socket.
func (s *Server) Socket() string { return filepath.Join(s.dir, "mysql.sock") }

// init hands the directory to the user mysql if we are root, and runs
// mariadb-install-db.
func (s *Server) init() error {
	args := []string{"--no-defaults", "--datadir=" + s.data(), "--auth-root-authentication-method=normal",
		"--skip-test-db"}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("mysql")
		if err != nil {
			return fmt.Errorf("running as root, MariaDB needs the user mysql: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(s.dir, uid, gid); err != nil {
			return err
		}
		s.runAs = "mysql"
		args = append(args, "--user=mysql")
	}
	out, err := exec.Command(s.installDB, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("mariadb-install-db: %v\n%s", err, out)
	}
	return nil
}

// StartAgain starts the server (again, after Stop or Kill) on the same
// data and socket, and waits up to a minute until it accepts connections.
// It runs without the doublewrite buffer's and the binary log's costs
// but with innodb_flush_log_at_trx_commit=1, the default: a commit is on
// disk when it returns, so a kill of the server loses nothing committed.
func (s *Server) StartAgain() error {
	_ = os.Remove(s.Socket())
	args := []string{"--no-defaults", "--datadir=" + s.data(), "--socket=" + s.Socket(), "--skip-networking",
		"--log-error=" + s.logFile(), "--pid-file=" + filepath.Join(s.dir, "mariadbd.pid"),
		"--innodb-buffer-pool-size=128M", "--innodb-log-file-size=64M", "--max-connections=400",
		"--innodb-flush-log-at-trx-commit=1", "--skip-name-resolve", "--character-set-server=utf8mb4"}
	if s.runAs != "" {
		args = append(args, "--user="+s.runAs)
	}
	cmd := exec.Command(s.mariadbd, args...)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("mariadbd: %w", err)
	}
	s.cmd, s.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) { _ = cmd.Wait(); close(exited) }(s.exited)
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return fmt.Errorf("mariadbd exited at start%s", s.logTail())
		case <-time.After(20 * time.Millisecond):
		}
		if c, err := dialSocket(s.Socket()); err == nil {
			c.Close()
			return nil
		}
	}
	_ = s.Kill()
	return fmt.Errorf("mariadbd did not accept connections within a minute%s", s.logTail())
}

// Stop stops the server cleanly (SIGTERM) and waits up to a minute for it
// to exit.
func (s *Server) Stop() error { return s.signal(syscall.SIGTERM) }

// Kill kills the server (SIGKILL), as a crash would: recovery at the next
// start.
func (s *Server) Kill() error { return s.signal(syscall.SIGKILL) }

func (s *Server) signal(sig syscall.Signal) error {
	if s.cmd == nil {
		return nil
	}
	select {
	case <-s.exited:
		return nil
	default:
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		return err
	}
	select {
	case <-s.exited:
		return nil
	case <-time.After(time.Minute):
		_ = s.cmd.Process.Kill()
		return fmt.Errorf("mariadbd did not exit within a minute of %v", sig)
	}
}

// Remove deletes the server's directory; stop it first.
func (s *Server) Remove() { _ = os.RemoveAll(s.dir) }

// DSN is a go-sql-driver/mysql data source name of the database name
// (which the caller creates, see CreateDB) as root, on the socket, with
// the options the stores' tests use (parseTime, interpolateParams).
func (s *Server) DSN(db string) string {
	return "root@unix(" + s.Socket() + ")/" + db + "?parseTime=true&interpolateParams=true"
}

// URL is the database db as a mysql:// URL, for programs that take one
// (twq's and twbench's -store).
func (s *Server) URL(db string) string {
	return "mysql://root@/" + db + "?socket=" + url.QueryEscape(s.Socket())
}

// Client runs the mariadb client on the server as root with the SQL text
// sql, and returns its output.
func (s *Server) Client(sql string) (string, error) {
	client, ok := find("mariadb")
	if !ok {
		return "", errors.New("no mariadb client")
	}
	out, err := exec.Command(client, "--no-defaults", "-S", s.Socket(), "-uroot", "-N", "-e", sql).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("mariadb -e %q: %v\n%s", sql, err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// CreateDB creates the database name unless it exists.
func (s *Server) CreateDB(name string) error {
	_, err := s.Client("CREATE DATABASE IF NOT EXISTS `" + name + "`")
	return err
}

func (s *Server) logTail() string {
	b, _ := os.ReadFile(s.logFile())
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return "\nerror.log:\n" + strings.Join(lines, "\n")
}
