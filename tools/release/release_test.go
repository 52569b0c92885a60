package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testVersion is the version the test releases: never a real one.
const testVersion = "v0.99.0"

// A user outside the repository installs twq and builds a program that
// imports durable/redisstore, as their go command sees the modules once
// they are tagged: from a module proxy made of the repository's HEAD as
// the release pins it, without the workspace, with nothing replaced.
func TestAUserInstallsTheRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds twq and a program from a module proxy; not with -short")
	}
	tree, proxy := t.TempDir(), t.TempDir()
	require.NoError(t, export("../..", tree))
	mods, err := pin(tree, testVersion, proxy)
	require.NoError(t, err)
	for _, m := range mods[1:] {
		f, err := readGoMod(filepath.Join(tree, m.Dir))
		require.NoError(t, err)
		assert.Empty(t, f.Replace, "%s keeps a replace directive", m.Path)
	}

	home := t.TempDir()
	gobin := filepath.Join(home, "bin")
	env := userEnv(t, home, gobin, proxy)

	twq := "github.com/seed64e23a5c/timingwheel/cmd/twq@" + testVersion
	runGo(t, home, env, "install", twq)
	out, _ := exec.Command(filepath.Join(gobin, "twq")).CombinedOutput()
	assert.Contains(t, string(out), "twq", "the installed twq prints its usage")

	app := filepath.Join(home, "app")
	require.NoError(t, os.Mkdir(app, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(app, "go.mod"), []byte("module example.com/app\n\ngo 1.26.0\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(app, "main.go"), []byte(`package main

import (
	"fmt"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/redisstore"
)

func main() {
	_ = redisstore.New
	fmt.Println(durable.ErrClosed)
}
`), 0o644))
	// Both packages the program imports: redisstore no longer brings
	// durable's dependencies (it imports only durable/store).
	runGo(t, app, env, "get", "github.com/seed64e23a5c/timingwheel/durable@"+testVersion,
		"github.com/seed64e23a5c/timingwheel/durable/redisstore@"+testVersion)
	runGo(t, app, env, "build", "-o", "app", ".")
	out, err = exec.Command(filepath.Join(app, "app")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "closed")
	sum, err := os.ReadFile(filepath.Join(app, "go.sum"))
	require.NoError(t, err)
	assert.Contains(t, string(sum), "github.com/seed64e23a5c/timingwheel "+testVersion+" h1:",
		"the root module comes at the release's version")
}

// userEnv is the environment of a user's go command: no workspace, a
// module cache of its own, the release's modules from proxy, the others
// from this machine's module cache or the public proxy, and no checksum
// database for the release's modules (they are not public).
func userEnv(t *testing.T, home, gobin, proxy string) []string {
	t.Helper()
	cache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	require.NoError(t, err)
	local := filepath.Join(strings.TrimSpace(string(cache)), "cache", "download")
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GO") || strings.HasPrefix(kv, "GOROOT=") || strings.HasPrefix(kv, "GOCACHE=") {
			env = append(env, kv)
		}
	}
	return append(env,
		"GOWORK=off",
		"GOFLAGS=-modcacherw",
		"GOTOOLCHAIN=local",
		"GOBIN="+gobin,
		"GOPATH="+filepath.Join(home, "gopath"),
		"GOMODCACHE="+filepath.Join(home, "modcache"),
		"GOPROXY=file://"+proxy+",file://"+local+",https://proxy.golang.org",
		"GONOSUMDB=github.com/seed64e23a5c/timingwheel",
	)
}

func runGo(t *testing.T, dir string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go %s:\n%s", strings.Join(args, " "), out)
}

func TestVersionsThatCanBeReleased(t *testing.T) {
	for v, ok := range map[string]bool{
		"v0.1.0": true, "v1.2.3": true, "v0.1.0-rc.1": true,
		"0.1.0": false, "v0.1": false, "v2.0.0": false, "v0.1.0+build": false, "": false,
	} {
		assert.Equal(t, ok, semverOK(v), v)
	}
}
