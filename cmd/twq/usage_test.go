package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"q.db", "stats", "-h"}, {"q.db", "enqueue", "-help"}} {
		r := twq(t, args...)
		require.Equal(t, exitOK, r.code)
		assert.Empty(t, r.stdout)
		assert.Contains(t, r.stderr, "Usage:")
		assert.Contains(t, r.stderr, "requeue ID [-at TIME | -in DURATION]")
		assert.Contains(t, r.stderr, "serve [-addr HOST:PORT] [-read-only] [-auth-file F]")
		assert.Contains(t, r.stderr, "-allow-host NAME")
		assert.Contains(t, r.stderr, "postgres://[user:password@]host:port/db?queue=NAME[&schema=S]")
	}
}

// TestUsageErrors: a wrong command line exits 2 with one line and a hint
// to -h, before anything opens the queue (which does not exist here).
func TestUsageErrors(t *testing.T) {
	q := filepath.Join(t.TempDir(), "q.db")
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "name a queue"},
		{[]string{q}, "name a command after the queue"},
		{[]string{q, "purge"}, `unknown command "purge"`},
		{[]string{"-bogus", q, "stats"}, "flag provided but not defined: -bogus"},
		{[]string{"", "stats"}, "empty string"},
		{[]string{"http://host/q", "stats"}, `unknown scheme "http"`},
		{[]string{"postgres://localhost/db", "stats"}, "names no queue: add ?queue=NAME"},
		{[]string{"redis://localhost:6379/0", "stats"}, "names no queue: add ?queue=NAME"},
		{[]string{"redis://localhost:6379/zero?queue=q", "stats"}, "bad Redis URL"},
		{[]string{q, "stats", "extra"}, `stats: unexpected argument "extra"`},
		{[]string{q, "cancel"}, "cancel: missing the ID"},
		{[]string{q, "requeue"}, "requeue: missing the ID"},
		{[]string{q, "enqueue"}, "enqueue: missing the ID"},
		{[]string{q, "cancel", "a", "b"}, `cancel: unexpected argument "b"`},
		{[]string{q, "dead", "-limit", "0"}, "-limit must be positive"},
		{[]string{q, "dead", "-limit", "x"}, `invalid value "x" for flag -limit`},
		{[]string{q, "requeue", "a", "-at", "tomorrow"}, `-at "tomorrow" is not an RFC 3339 time`},
		{[]string{q, "requeue", "a", "-in", "-5m"}, `-in "-5m" is not a duration of zero or more`},
		{[]string{q, "requeue", "a", "-in", "5m", "-at", "2026-01-01T00:00:00Z"}, "give -at or -in, not both"},
		{[]string{q, "enqueue", "a", "-payload", "x", "-payload-file", "f"}, "give -payload or -payload-file, not both"},
		{[]string{"-timeout", "0s", q, "stats"}, "-timeout must be positive"},
	} {
		twq(t, c.args...).failed(t, exitUsage, c.want)
	}
}

// TestFlagsAnywhere: the common flags may follow the command, and a
// command's flags may come before or after the ID.
func TestFlagsAnywhere(t *testing.T) {
	b := newFileBackend(t)
	var d doneJSON
	twq(t, b.queue, "enqueue", "-in", "1h", "n1", "-json", "-payload", "x").ok(t).decode(t, &d)
	assert.Equal(t, "n1", d.ID)
	assert.Equal(t, 1, d.PayloadBytes)
	assert.False(t, d.Due.IsZero())
}
