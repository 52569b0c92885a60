package timingwheel_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A program that imports only the root package and queue sees at most 9
// modules in `go list -m all`, itself included, as the README says: the
// heavy extras (go-redis, gonum/plot...) are modules of their own.
func TestFootprintOfCoreOnlyProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the go command over a module of its own")
	}
	goCmd, err := exec.LookPath("go")
	require.NoError(t, err, "the go command is needed to list the modules")
	root, err := os.Getwd()
	require.NoError(t, err)

	dir := t.TempDir()
	write := func(name, text string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	write("go.mod", "module example.com/user\n\ngo 1.25\n\n"+
		"require github.com/seed64e23a5c/timingwheel v0.0.0\n\n"+
		"replace github.com/seed64e23a5c/timingwheel => "+root+"\n")
	write("main.go", `package main

import (
	"time"

	"github.com/seed64e23a5c/timingwheel"
	"github.com/seed64e23a5c/timingwheel/queue"
)

func main() {
	w, _ := timingwheel.New()
	w.Start()
	defer w.Stop()
	q := queue.New[string](queue.WithWheel(w))
	_ = q.Offer("k", "v", time.Second)
}
`)
	cmd := exec.Command(goCmd, "list", "-m", "all")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go list -m all: %s", out)
	modules := strings.Split(strings.TrimSpace(string(out)), "\n")
	t.Logf("go list -m all of a core-only program:\n%s", out)
	require.LessOrEqual(t, len(modules), 9, "modules listed: %q", modules)
	for _, heavy := range []string{"go-redis", "gonum.org", "progressbar", "golang.org/x/image"} {
		require.NotContains(t, string(out), heavy)
	}
}
