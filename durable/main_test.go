package durable

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// childEnv names the child process a test binary runs as, when a test
// re-executes it (see crash_test.go).
const childEnv = "DURABLE_TEST_CHILD"

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role))
	}
	goleak.VerifyTestMain(m)
}
