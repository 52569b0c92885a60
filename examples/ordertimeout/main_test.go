package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/internal/syncbuf"
)

func ids(re *regexp.Regexp, out string) []string {
	var got []string
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		got = append(got, m[1])
	}
	return got
}

var (
	placedRE   = regexp.MustCompile(`placed (\S+) `)
	paidRE     = regexp.MustCompile(`paid (\S+)\n`)
	closedRE   = regexp.MustCompile(`closed unpaid (\S+) `)
	remindedRE = regexp.MustCompile(`reminded unpaid (\S+) `)
	waitingRE  = regexp.MustCompile(`(\d+) unpaid orders waiting`)
)

// TestUnpaidOrdersAreClosedAfterARestart places orders, stops the program
// before they are due, and starts it again: it must close exactly the
// unpaid ones, and remind each of their buyers once (in one run or the
// other: the reminders are due halfway).
func TestUnpaidOrdersAreClosedAfterARestart(t *testing.T) {
	db := filepath.Join(t.TempDir(), "orders.db")
	c := config{db: db, orders: 10, delay: time.Second, remind: 500 * time.Millisecond, payRate: 0.5, prefix: "t"}

	// First run: place the orders, then stop at once.
	ctx, cancel := context.WithCancel(context.Background())
	first := &syncbuf.Buffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, c, first) }()
	require.Eventually(t, func() bool { return strings.Contains(first.String(), "unpaid orders waiting") },
		10*time.Second, time.Millisecond)
	cancel()
	require.NoError(t, <-done, "run returns nil when its ctx ends")
	placed, paid := ids(placedRE, first.String()), ids(paidRE, first.String())
	require.Len(t, placed, 10)
	assert.Empty(t, ids(closedRE, first.String()), "nothing was due before the stop")
	assert.Equal(t, []string{fmt.Sprint(len(placed) - len(paid))}, ids(waitingRE, first.String()), "the unpaid orders waiting")

	// Second run: no new orders; the unpaid ones are closed when due.
	unpaid := len(placed) - len(paid)
	second := &syncbuf.Buffer{}
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	go func() { done <- run(ctx, config{db: db, delay: c.delay}, second) }()
	require.Eventually(t, func() bool { return len(ids(closedRE, second.String())) >= unpaid },
		10*time.Second, time.Millisecond, "output: %s", second.String())
	cancel()
	require.NoError(t, <-done, "run returns nil when its ctx ends")

	closed := ids(closedRE, second.String())
	reminded := append(ids(remindedRE, first.String()), ids(remindedRE, second.String())...)
	isPaid := map[string]bool{}
	for _, id := range paid {
		isPaid[id] = true
	}
	var wantClosed []string
	for _, id := range placed {
		if !isPaid[id] {
			wantClosed = append(wantClosed, id)
		}
	}
	assert.ElementsMatch(t, wantClosed, closed)
	assert.ElementsMatch(t, wantClosed, reminded, "each unpaid order's buyer reminded once")
}

// placeAndStop runs the program with args until it has placed its orders,
// then stops it, and returns the config it ran with.
func placeAndStop(t *testing.T, args ...string) config {
	t.Helper()
	c, err := parseFlags(append([]string{"-orders", "2", "-delay", "1h", "-pay", "0"}, args...), io.Discard)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &syncbuf.Buffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, c, out) }()
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "unpaid orders waiting") },
		10*time.Second, time.Millisecond, "output: %s", out.String())
	cancel()
	require.NoError(t, <-done, "run returns nil when its ctx ends")
	assert.Contains(t, out.String(), " unpaid orders waiting in "+c.db)
	return c
}

// isolate runs the test in an empty working directory with a cache
// directory of its own, and returns both.
func isolate(t *testing.T) (cwd, cache string) {
	t.Helper()
	cwd, cache = t.TempDir(), t.TempDir()
	t.Chdir(cwd)
	t.Setenv("XDG_CACHE_HOME", cache) // Linux and the BSDs
	t.Setenv("HOME", cache)           // macOS: $HOME/Library/Caches
	t.Setenv("LocalAppData", cache)   // Windows
	return cwd, cache
}

// TestDefaultDBIsInTheCacheDir checks that, without -db, the queue's file
// goes to the user's cache directory and nothing to the working
// directory.
func TestDefaultDBIsInTheCacheDir(t *testing.T) {
	cwd, _ := isolate(t)
	userCache, err := os.UserCacheDir()
	require.NoError(t, err)
	want := filepath.Join(userCache, "timingwheel", "orders.db")

	c := placeAndStop(t)
	assert.Equal(t, want, c.db)
	assert.FileExists(t, want)
	entries, err := os.ReadDir(cwd)
	require.NoError(t, err)
	assert.Empty(t, entries, "the run wrote in the working directory")
}

// TestDefaultDBFallsBackToTheTempDir checks that, without a cache
// directory, the queue's file goes to the temp directory.
func TestDefaultDBFallsBackToTheTempDir(t *testing.T) {
	cwd, _ := isolate(t)
	tmp := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "")
	t.Setenv("LocalAppData", "")
	t.Setenv("TMPDIR", tmp)
	t.Setenv("TMP", tmp)
	_, err := os.UserCacheDir()
	require.Error(t, err, "the environment leaves no cache directory")

	c := placeAndStop(t)
	assert.Equal(t, filepath.Join(os.TempDir(), "timingwheel", "orders.db"), c.db)
	assert.FileExists(t, c.db)
	entries, err := os.ReadDir(cwd)
	require.NoError(t, err)
	assert.Empty(t, entries, "the run wrote in the working directory")
}

// TestDBFlag checks that -db puts the queue's file where it says,
// creating its directory, and nowhere else.
func TestDBFlag(t *testing.T) {
	cwd, cache := isolate(t)
	path := filepath.Join(t.TempDir(), "shop", "queue.db")

	c := placeAndStop(t, "-db", path)
	assert.Equal(t, path, c.db)
	assert.FileExists(t, path)
	assert.NoFileExists(t, defaultDB())
	for _, dir := range []string{cwd, cache} {
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		assert.Empty(t, entries, "the run wrote in %s", dir)
	}

	// A relative -db is relative to the working directory, as asked.
	c = placeAndStop(t, "-db", "here.db")
	assert.Equal(t, "here.db", c.db)
	assert.FileExists(t, filepath.Join(cwd, "here.db"))
}
