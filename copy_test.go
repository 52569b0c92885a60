package timingwheel

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// copyOf copies a Timer by value, as a program must not (go vet says so).
//
//go:noinline
func copyOf(t *Timer) *Timer {
	c := new(Timer)
	*(*[48]byte)(unsafe.Pointer(c)) = *(*[48]byte)(unsafe.Pointer(t))
	return c
}

// A copy of a Timer panics with a message that says what is wrong, rather
// than reading past its end (a channel timer's handle) or unlinking the
// timer it was copied from.
func TestStopOrResetOfACopyPanics(t *testing.T) {
	w, _ := mockWheel(t)
	ch := w.NewTimer(time.Hour)
	fn := w.AfterFunc(time.Hour, func() {})
	for name, c := range map[string]*Timer{"channel": copyOf(ch), "func": copyOf(fn)} {
		assert.PanicsWithValue(t, errCopied, func() { c.Stop() }, name)
		assert.PanicsWithValue(t, errCopied, func() { c.Reset(time.Minute) }, name)
	}
	assert.True(t, ch.Stop(), "the original is untouched")
	assert.True(t, fn.Stop(), "the original is untouched")
}

// go vet reports a Timer copied by value.
func TestVetReportsACopiedTimer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program with go vet; -short leaves it out")
	}
	goBin, err := exec.LookPath("go")
	require.NoError(t, err, "the go command runs go vet")
	root, err := filepath.Abs(".")
	require.NoError(t, err)
	dir := t.TempDir()
	write := func(name, text string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	write("go.mod", "module copier\n\ngo 1.25\n\nrequire github.com/seed64e23a5c/timingwheel v0.0.0\n\nreplace github.com/seed64e23a5c/timingwheel => "+root+"\n")
	write("main.go", `package main

import "github.com/seed64e23a5c/timingwheel"

func main() {
	w, _ := timingwheel.New()
	t := w.AfterFunc(0, func() {})
	c := *t
	c.Stop()
}
`)
	cmd := exec.Command(goBin, "vet", "-mod=mod", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "go vet passed a copied Timer:\n%s", out)
	assert.Contains(t, string(out), "copies lock value", "go vet's output:\n%s", out)
}
