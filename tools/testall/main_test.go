package main

import (
	"bytes"
	"strings"
	"testing"
)

// A stream of go test -json as test2json writes it: a package that passes
// with a skipped test and a skipped subtest, one without test files, one
// whose tests skip for want of a server, and one that fails.
const stream = `{"Action":"start","Package":"example.com/a"}
{"Action":"run","Package":"example.com/a","Test":"TestA"}
{"Action":"output","Package":"example.com/a","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"example.com/a","Test":"TestA","Output":"    a_test.go:12: no Chromium found on PATH (apt-get install chromium); set REQUIRE_BROWSER=1 to fail instead of skipping\n"}
{"Action":"output","Package":"example.com/a","Test":"TestA","Output":"--- SKIP: TestA (0.00s)\n"}
{"Action":"skip","Package":"example.com/a","Test":"TestA","Elapsed":0}
{"Action":"output","Package":"example.com/a","Test":"TestB/Pause","Output":"    --- SKIP: TestB/Pause (0.00s)\n"}
{"Action":"output","Package":"example.com/a","Test":"TestB/Pause","Output":"        suite.go:40: not a Pauser\n"}
{"Action":"skip","Package":"example.com/a","Test":"TestB/Pause","Elapsed":0}
{"Action":"pass","Package":"example.com/a","Test":"TestB","Elapsed":0.1}
{"Action":"output","Package":"example.com/a","Output":"ok  \texample.com/a\t0.2s\n"}
{"Action":"pass","Package":"example.com/a","Elapsed":0.2}
{"Action":"output","Package":"example.com/b","Output":"?   \texample.com/b\t[no test files]\n"}
{"Action":"skip","Package":"example.com/b","Elapsed":0}
{"Action":"output","Package":"example.com/c","Test":"TestC1","Output":"    c_test.go:9: skipped: no PostgreSQL binaries (set REQUIRE_POSTGRES=1 to fail instead)\n"}
{"Action":"skip","Package":"example.com/c","Test":"TestC1","Elapsed":0}
{"Action":"output","Package":"example.com/c","Test":"TestC2","Output":"    c_test.go:9: skipped: no PostgreSQL binaries (set REQUIRE_POSTGRES=1 to fail instead)\n"}
{"Action":"skip","Package":"example.com/c","Test":"TestC2","Elapsed":0}
{"Action":"pass","Package":"example.com/c","Elapsed":0.3}
{"Action":"output","Package":"example.com/d","Test":"TestD","Output":"    d_test.go:5: want 1, got 2\n"}
{"Action":"output","Package":"example.com/d","Test":"TestD","Output":"--- FAIL: TestD (0.00s)\n"}
{"Action":"fail","Package":"example.com/d","Test":"TestD","Elapsed":0}
{"Action":"output","Package":"example.com/d","Output":"FAIL\n"}
{"Action":"fail","Package":"example.com/d","Elapsed":0.4}
not json: printed as it is
`

func TestReport(t *testing.T) {
	r := newReport()
	var out bytes.Buffer
	r.read(strings.NewReader(stream), &out)
	r.printSkips(&out)
	got := out.String()
	for _, want := range []string{
		"ok   example.com/a\t0.2s\n",
		"    d_test.go:5: want 1, got 2\n--- FAIL: TestD (0.00s)\n",
		"FAIL example.com/d\t0.4s\n",
		"not json: printed as it is\n",
		"== skipped: 4 tests\n",
		"example.com/a  TestA: no Chromium found on PATH (apt-get install chromium); set REQUIRE_BROWSER=1 to fail instead of skipping\n",
		"example.com/a  TestB/Pause: not a Pauser\n",
		"example.com/c  TestC1, TestC2: skipped: no PostgreSQL binaries (set REQUIRE_POSTGRES=1 to fail instead)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "example.com/b") {
		t.Errorf("a package without test files is reported:\n%s", got)
	}
	if r.packages != 3 || len(r.failed) != 1 || r.failed[0] != "example.com/d" {
		t.Errorf("packages %d, failed %v; want 3 and [example.com/d]", r.packages, r.failed)
	}
}

func TestDescribe(t *testing.T) {
	redis := servers[0]
	if got := describe(redis, nil); got != "unknown" {
		t.Errorf("without /proc: %q", got)
	}
	if got := describe(redis, map[string]string{}); got != "not started (apt-get install redis-server)" {
		t.Errorf("not seen: %q", got)
	}
	if got := describe(redis, map[string]string{"redis-server": ""}); got != "redis-server" {
		t.Errorf("seen, executable unknown: %q", got)
	}
}
