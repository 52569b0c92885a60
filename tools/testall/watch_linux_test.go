package main

import (
	"os"
	"os/exec"
	"testing"
)

func TestDescends(t *testing.T) {
	// 100 (us) -> 200 (go test) -> 300 (a test) -> 400 (redis-server); 500 is
	// another user's, under 2; 600's parent was not read.
	procs := map[int]proc{
		200: {ppid: 100}, 300: {ppid: 200}, 400: {comm: "redis-server", ppid: 300},
		500: {ppid: 2}, 2: {ppid: 0}, 600: {ppid: 700},
	}
	foreign := map[int]bool{800: true}
	procs[900] = proc{ppid: 800}
	for pid, want := range map[int]answer{200: yes, 400: yes, 500: no, 2: no, 600: unknown, 900: no} {
		if got := descends(procs, foreign, pid, 100); got != want {
			t.Errorf("descends(%d) = %d, want %d", pid, got, want)
		}
	}
}

// A scan sees a program this process started, by its name and path.
func TestScanSeesAChild(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep(1) on PATH (coreutils) to start as a child: skipping")
	}
	cmd := exec.Command(sleep, "5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	old := servers
	servers = append(servers, server{name: "sleep", procs: []string{"sleep"}})
	defer func() { servers = old }()
	sc := &scanner{self: os.Getpid(), goTest: cmd.Process.Pid, seen: map[string]string{}}
	sc.scan()
	if got := sc.seen["sleep"]; got != sleep {
		t.Errorf("seen %q, want sleep at %q (all: %v)", got, sleep, sc.seen)
	}
}
