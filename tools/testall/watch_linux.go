package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A watcher records the programs that run under the tests, from /proc.
// It makes this process a child subreaper, so that a server that leaves its
// parent (pg_ctl's postmaster) stays among our descendants, and reaps those
// of them that exit.
type watcher struct {
	note string // why the record may miss servers, if it may
}

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER of prctl(2).
const prSetChildSubreaper = 36

func newWatcher() *watcher {
	w := &watcher{}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		w.note = "; servers that leave their parent are missed: prctl: " + errno.Error()
	}
	return w
}

func (w *watcher) how() string { return "the processes under go test, read from /proc" + w.note }

// start watches the descendants of this process until the returned
// function is called; that function returns the programs seen, by process
// name, with the path of their program ("" if unreadable).
func (w *watcher) start(goTest int) func() map[string]string {
	sc := &scanner{self: os.Getpid(), goTest: goTest, seen: map[string]string{}}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			sc.scan()
			select {
			case <-done:
				sc.scan()
				return
			case <-tick.C:
			}
		}
	}()
	return func() map[string]string {
		close(done)
		<-finished
		return sc.seen
	}
}

// A proc is a process as /proc/PID/stat shows it.
type proc struct {
	comm  string
	state byte
	ppid  int
}

// A scanner records the watched programs among this process's
// descendants, and reaps the zombies it inherits as their subreaper.
type scanner struct {
	self, goTest int
	seen         map[string]string
	// foreign holds the processes found not to descend from this one:
	// a process never becomes a descendant, so each is read once (the
	// cache is dropped now and then, for pids used again).
	foreign map[int]bool
	scans   int
}

func (sc *scanner) scan() {
	if sc.scans++; sc.scans%50 == 1 {
		sc.foreign = map[int]bool{}
	}
	entries, _ := os.ReadDir("/proc")
	procs := map[int]proc{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || sc.foreign[pid] {
			continue
		}
		if p, ok := readStat(pid); ok {
			procs[pid] = p
		}
	}
	for pid, p := range procs {
		if p.ppid == sc.self && p.state == 'Z' && pid != sc.goTest {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil) // not goTest, which os/exec waits for
			continue
		}
		switch descends(procs, sc.foreign, pid, sc.self) {
		case no:
			sc.foreign[pid] = true
			continue
		case unknown:
			continue
		}
		if !watched(p.comm) {
			continue
		}
		// The program itself, not a wrapper script of that name (Debian's
		// chromium is a shell script that runs /usr/lib/chromium/chromium).
		if path, ok := sc.seen[p.comm]; !ok || !strings.HasPrefix(filepath.Base(path), p.comm) {
			sc.seen[p.comm] = program(pid, p.comm)
		}
	}
}

// readStat reads /proc/PID/stat.
func readStat(pid int) (proc, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return proc{}, false
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return proc{}, false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 2 || len(f[0]) == 0 {
		return proc{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	return proc{comm: s[open+1 : end], state: f[0][0], ppid: ppid}, true
}

type answer int

const (
	no answer = iota
	yes
	unknown // a process of the chain was not read (foreign, or gone meanwhile)
)

// descends says whether pid descends from ancestor, from procs and the
// processes known not to.
func descends(procs map[int]proc, foreign map[int]bool, pid, ancestor int) answer {
	for i := 0; i < 64; i++ {
		if pid == ancestor {
			return yes
		}
		if pid <= 1 || foreign[pid] {
			return no
		}
		p, ok := procs[pid]
		if !ok {
			return unknown
		}
		pid = p.ppid
	}
	return unknown
}

func watched(comm string) bool {
	for _, s := range servers {
		for _, p := range s.procs {
			if p == comm {
				return true
			}
		}
	}
	return false
}

// program returns the path of the program pid runs, named comm: the path
// it was started by (argv[0], if a path to comm: /usr/bin/redis-server,
// which is a link to redis-check-rdb on Debian), else its executable, or
// "" if neither can be read.
func program(pid int, comm string) string {
	dir := "/proc/" + strconv.Itoa(pid)
	if b, err := os.ReadFile(dir + "/cmdline"); err == nil {
		arg0, _, _ := strings.Cut(string(b), "\x00")
		arg0, _, _ = strings.Cut(arg0, " ") // a process title: "/usr/bin/redis-server 127.0.0.1:6379"
		fi, err := os.Stat(arg0)
		if err == nil && filepath.IsAbs(arg0) && !fi.IsDir() && strings.HasPrefix(filepath.Base(arg0), comm) {
			return arg0
		}
	}
	exe, _ := os.Readlink(dir + "/exe")
	return strings.TrimSuffix(exe, " (deleted)")
}
