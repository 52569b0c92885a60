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
// name, with their executable's path ("" if unreadable).
func (w *watcher) start(goTest int) func() map[string]string {
	seen := map[string]string{}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			scan(goTest, seen)
			select {
			case <-done:
				scan(goTest, seen)
				return
			case <-tick.C:
			}
		}
	}()
	return func() map[string]string {
		close(done)
		<-finished
		return seen
	}
}

// A proc is a process as /proc/PID/stat shows it.
type proc struct {
	comm  string
	state byte
	ppid  int
}

// scan records the watched programs among this process's descendants, and
// reaps the zombies it inherited (not goTest, which os/exec waits for).
func scan(goTest int, seen map[string]string) {
	procs := map[int]proc{}
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range dirs {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) < 2 || len(f[0]) == 0 {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		ppid, _ := strconv.Atoi(f[1])
		procs[pid] = proc{comm: s[open+1 : end], state: f[0][0], ppid: ppid}
	}
	self := os.Getpid()
	for pid, p := range procs {
		if p.ppid == self && p.state == 'Z' && pid != goTest {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
			continue
		}
		if !watched(p.comm) || !descends(procs, pid, self) {
			continue
		}
		if _, ok := seen[p.comm]; ok {
			continue
		}
		exe, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
		seen[p.comm] = strings.TrimSuffix(exe, " (deleted)")
	}
}

// descends reports whether pid is a descendant of ancestor.
func descends(procs map[int]proc, pid, ancestor int) bool {
	for i := 0; i < 64 && pid > 1; i++ {
		p, ok := procs[pid]
		if !ok {
			return false
		}
		if p.ppid == ancestor {
			return true
		}
		pid = p.ppid
	}
	return false
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
