package redisstore

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed64e23a5c/timingwheel/internal/redistest"
)

// redisBinary returns the path of redis-server (see redistest.Binary).
func redisBinary(t testing.TB) string { return redistest.Binary(t, "redis-server") }

// A redisServer is a redis-server the test started, in a temporary
// directory, on a unix socket (port 0) or a loopback port. The test's
// cleanup kills it.
type redisServer struct {
	t    testing.TB
	bin  string
	dir  string // data directory, with redis.log
	sock string // unix socket, if port is 0
	port int
	args []string
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd exits
}

// startRedis starts a redis-server on a unix socket, without persistence
// unless extra arguments turn it on.
func startRedis(t testing.TB, extra ...string) *redisServer {
	t.Helper()
	bin := redisBinary(t)
	sockDir, err := os.MkdirTemp("", "rs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(sockDir) })
	s := &redisServer{t: t, bin: bin, dir: t.TempDir(), sock: filepath.Join(sockDir, "redis.sock")}
	s.args = append([]string{"--port", "0", "--unixsocket", s.sock}, s.baseArgs(extra)...)
	s.start()
	t.Cleanup(s.kill)
	return s
}

// startRedisTCP starts a redis-server on a free loopback port (whose
// cluster bus port, 10000 higher, is free too).
func startRedisTCP(t testing.TB, extra ...string) *redisServer {
	t.Helper()
	bin := redisBinary(t)
	var lastErr error
	for range 10 {
		port := freePort(t)
		s := &redisServer{t: t, bin: bin, dir: t.TempDir(), port: port}
		s.args = append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1"}, s.baseArgs(extra)...)
		if lastErr = s.tryStart(); lastErr == nil {
			t.Cleanup(s.kill)
			return s
		}
	}
	t.Fatalf("starting redis-server: %v", lastErr)
	return nil
}

func (s *redisServer) baseArgs(extra []string) []string {
	args := []string{
		"--dir", s.dir,
		"--logfile", filepath.Join(s.dir, "redis.log"),
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
	}
	return append(args, extra...)
}

// freePort returns a loopback port that is free, and whose port+10000 is
// free too, at the time of the call.
func freePort(t testing.TB) int {
	t.Helper()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if port > 55000 {
			continue
		}
		bus, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+10000))
		if err != nil {
			continue
		}
		_ = bus.Close()
		return port
	}
	t.Fatal("no free port pair")
	return 0
}

func (s *redisServer) start() {
	s.t.Helper()
	if err := s.tryStart(); err != nil {
		s.t.Fatalf("starting redis-server: %v", err)
	}
}

// tryStart starts the server and waits until it answers PING.
func (s *redisServer) tryStart() error {
	cmd := exec.Command(s.bin, s.args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd = cmd
	s.done = make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(s.done)
	c := s.newClient()
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("redis-server exited: %s%s", out.String(), s.logTail())
		default:
		}
		if time.Now().After(deadline) {
			s.kill()
			return fmt.Errorf("redis-server does not answer: %v%s", err, s.logTail())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *redisServer) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return "\nredis.log:\n" + strings.Join(lines, "\n")
}

// kill stops the server with SIGKILL, as a crash would, and waits for it.
func (s *redisServer) kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
	s.cmd = nil
}

// restart starts the server again with the same arguments: same socket
// or port, same data directory.
func (s *redisServer) restart() {
	s.t.Helper()
	s.kill()
	s.start()
}

// addr is the address for redis.Options.
func (s *redisServer) addr() string {
	if s.port == 0 {
		return s.sock
	}
	return fmt.Sprintf("127.0.0.1:%d", s.port)
}

func (s *redisServer) options() *redis.Options {
	o := &redis.Options{Addr: s.addr()}
	if s.port == 0 {
		o.Network = "unix"
	}
	return o
}

// newClient returns a client the caller closes.
func (s *redisServer) newClient() *redis.Client {
	return redis.NewClient(s.options())
}

// client returns a client closed by the test's cleanup.
func (s *redisServer) client(t testing.TB) *redis.Client {
	c := s.newClient()
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// startCluster starts n redis-servers with cluster mode on loopback ports,
// joins them into a cluster of n masters with redis-cli --cluster create,
// and waits until every node reports cluster_state:ok. It returns their
// addresses.
func startCluster(t testing.TB, n int) []string {
	t.Helper()
	redisBinary(t)
	cli := redistest.Binary(t, "redis-cli")
	var addrs []string
	var nodes []*redisServer
	for range n {
		s := startRedisTCP(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000")
		nodes = append(nodes, s)
		addrs = append(addrs, s.addr())
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	out, err := exec.Command(cli, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, s := range nodes {
		c := s.newClient()
		for {
			info, err := c.ClusterInfo(context.Background()).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				_ = c.Close()
				t.Fatalf("cluster not ok on %s: %v %s", s.addr(), err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
		_ = c.Close()
	}
	return addrs
}
