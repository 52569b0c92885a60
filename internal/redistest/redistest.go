// Package redistest finds redis-server for the tests that start their own
// Redis, with the policy every such test follows: skip with a message when
// it is not installed, unless REQUIRE_REDIS=1 (as in CI), which makes that
// a failure.
package redistest

import (
	"os"
	"os/exec"
	"testing"
)

// Binary returns the path of the program name (redis-server, redis-cli),
// or skips t, or fails it if REQUIRE_REDIS=1, when it is not on PATH.
func Binary(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("REQUIRE_REDIS") == "1" {
			t.Fatalf("%s is not on PATH, and REQUIRE_REDIS=1: %v", name, err)
		}
		t.Skipf("%s is not on PATH: skipping (install redis-server, which brings redis-cli, or set REQUIRE_REDIS=1 to fail instead)", name)
	}
	return p
}
