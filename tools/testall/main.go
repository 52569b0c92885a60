// Command testall runs the tests of every module of the workspace and says
// what they ran on: which servers and browsers the tests started (Redis,
// PostgreSQL, MariaDB, Chromium) and which tests were skipped, and why.
//
//	go run ./tools/testall                  # every test of every module, under the race detector
//	go run ./tools/testall -count=1 -short  # flags go to go test
//	go run ./tools/testall ./durable/...    # arguments without a dash replace the modules' patterns
//
// It runs go test -json -race over each module's ./... (the modules go
// list -m names: those of go.work), prints each package's result as go test
// does, and the output of the tests that failed; then the report:
//
//	== servers and browsers the tests started
//	Redis        /usr/bin/redis-server: Redis server v=7.0.15 ...
//	PostgreSQL   /usr/lib/postgresql/15/bin/postgres: postgres (PostgreSQL) 15.10
//	MariaDB      not started
//	Chromium     /usr/lib/chromium/chromium: Chromium 131.0.6778.139
//	== skipped: 3 tests
//	durable/mysqlstore  TestContract, TestWakeup (2): no MariaDB binaries ...
//
// A server is "started" when a process of that program ran under the
// tests, seen in /proc while they ran (Linux; elsewhere the section says it
// cannot tell). The exit status is go test's.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	var flags, patterns []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			flags = append(flags, a)
		} else {
			patterns = append(patterns, a)
		}
	}
	if len(patterns) == 0 {
		out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}/...").Output()
		if err != nil {
			fmt.Fprintln(stderr, "testall: go list -m:", err)
			return 1
		}
		patterns = strings.Fields(string(out))
	}
	goArgs := append(append([]string{"test", "-json", "-race"}, flags...), patterns...)
	fmt.Fprintf(stdout, "== go %s\n", strings.Join(goArgs, " "))

	cmd := exec.Command("go", goArgs...)
	cmd.Stderr = stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(stderr, "testall:", err)
		return 1
	}
	watch := newWatcher()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "testall:", err)
		return 1
	}
	stopWatch := watch.start(cmd.Process.Pid)
	rep := newReport()
	rep.read(pipe, stdout)
	err = cmd.Wait()
	seen := stopWatch()

	fmt.Fprintf(stdout, "\n== servers and browsers the tests started (%s)\n", watch.how())
	for _, s := range servers {
		fmt.Fprintf(stdout, "%-12s %s\n", s.name, describe(s, seen))
	}
	rep.printSkips(stdout)
	code := 0
	if err != nil {
		code = 1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	status := "ok"
	if code != 0 {
		status = "FAIL"
		if len(rep.failed) > 0 {
			status += ": " + strings.Join(rep.failed, ", ")
		}
	}
	fmt.Fprintf(stdout, "== %s (%d packages, %s)\n", status, rep.packages, time.Since(start).Round(time.Second))
	return code
}

// A server is a program the tests start, known by the names of its
// processes.
type server struct {
	name    string
	procs   []string // process names (comm), as /proc shows them
	install string
}

var servers = []server{
	{"Redis", []string{"redis-server"}, "apt-get install redis-server"},
	{"PostgreSQL", []string{"postgres"}, "apt-get install postgresql"},
	{"MariaDB", []string{"mariadbd", "mysqld"}, "apt-get install mariadb-server"},
	{"Chromium", []string{"chromium", "chromium-browse", "chrome", "headless_shell"}, "apt-get install chromium"},
}

// describe says whether s ran under the tests: the program and its
// version, or "not started".
func describe(s server, seen map[string]string) string {
	if seen == nil {
		return "unknown"
	}
	for _, p := range s.procs {
		exe, ok := seen[p]
		if !ok {
			continue
		}
		if exe == "" {
			return p
		}
		return exe + ": " + version(exe)
	}
	return "not started (" + s.install + ")"
}

// version runs exe --version and returns its first line.
func version(exe string) string {
	out, err := exec.Command(exe, "--version").Output()
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if err != nil && line == "" {
		return "(--version: " + err.Error() + ")"
	}
	return line
}

// An event is a line of go test -json (cmd/test2json).
type event struct {
	Action     string
	Package    string
	ImportPath string // build-output, build-fail
	Test       string
	Output     string
	Elapsed    float64
}

// A report gathers what go test -json says.
type report struct {
	output   map[string][]string // package + "\x00" + test: its output lines
	skips    []skip
	failed   []string
	packages int
}

// A skip is a test that was skipped, with the reason it gave.
type skip struct {
	pkg, test, reason string
}

func newReport() *report { return &report{output: map[string][]string{}} }

// read reads go test -json from r to its end, printing each package's
// result, and the output of failed tests, to w.
func (r *report) read(in io.Reader, w io.Writer) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(w, "%s\n", line) // not an event: as it is
			continue
		}
		r.event(e, w)
	}
}

func (r *report) event(e event, w io.Writer) {
	key := e.Package + "\x00" + e.Test
	switch e.Action {
	case "build-output":
		fmt.Fprint(w, e.Output)
	case "output":
		r.output[key] = append(r.output[key], e.Output)
	case "skip":
		if e.Test != "" { // a package-level skip is a package with no test files
			r.skips = append(r.skips, skip{e.Package, e.Test, skipReason(r.output[key])})
		}
		delete(r.output, key)
	case "pass":
		if e.Test == "" {
			r.packages++
			fmt.Fprintf(w, "%-4s %s\t%.1fs\n", "ok", e.Package, e.Elapsed)
		}
		delete(r.output, key)
	case "fail":
		if e.Test != "" {
			fmt.Fprint(w, strings.Join(r.output[key], ""))
			delete(r.output, key)
			return
		}
		r.packages++
		r.failed = append(r.failed, e.Package)
		// The package's own output (a panic, TestMain's, a timeout).
		fmt.Fprint(w, strings.Join(r.output[key], ""))
		fmt.Fprintf(w, "%-4s %s\t%.1fs\n", "FAIL", e.Package, e.Elapsed)
		delete(r.output, key)
	}
}

// skipReason returns what a skipped test said, without go test's own lines
// and the file:line prefix of t.Skip.
func skipReason(out []string) string {
	var parts []string
	for _, l := range out {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		if file, rest, ok := strings.Cut(t, ": "); ok && strings.Contains(file, ".go:") && !strings.Contains(file, " ") {
			t = rest
		}
		parts = append(parts, t)
	}
	if len(parts) == 0 {
		return "(no reason given)"
	}
	return strings.Join(parts, " ")
}

// printSkips prints the skipped tests, grouped by package and reason.
func (r *report) printSkips(w io.Writer) {
	fmt.Fprintf(w, "== skipped: %d tests\n", len(r.skips))
	type group struct {
		pkg, reason string
		tests       []string
	}
	var groups []*group
	index := map[[2]string]*group{}
	for _, s := range r.skips {
		k := [2]string{s.pkg, s.reason}
		g := index[k]
		if g == nil {
			g = &group{pkg: s.pkg, reason: s.reason}
			index[k] = g
			groups = append(groups, g)
		}
		g.tests = append(g.tests, s.test)
	}
	sort.SliceStable(groups, func(i, j int) bool { return groups[i].pkg < groups[j].pkg })
	for _, g := range groups {
		names := g.tests
		more := ""
		if len(names) > 3 {
			names, more = names[:3], fmt.Sprintf(", ... (%d)", len(g.tests))
		}
		fmt.Fprintf(w, "%s  %s%s: %s\n", g.pkg, strings.Join(names, ", "), more, g.reason)
	}
}
