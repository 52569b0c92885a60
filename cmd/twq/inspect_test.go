package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGet(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		r := twq(t, b.queue, "get", "p1").ok(t)
		assert.Regexp(t, `(?m)^id\s+"p1"$`, r.stdout)
		assert.Regexp(t, `(?m)^state\s+pending$`, r.stdout)
		assert.Regexp(t, `(?m)^due\s+`+b.soon.Local().Format(time.RFC3339)+` `, r.stdout)
		assert.Regexp(t, `(?m)^payload\s+"hello"$`, r.stdout)

		var i infoJSON
		twq(t, "-json", b.queue, "get", "p2").ok(t).decode(t, &i)
		assert.Equal(t, "pending", i.State)
		assert.Nil(t, i.Payload)
		assert.Equal(t, binaryPayload, i.PayloadBase64)
		assert.True(t, i.Due.Equal(b.soon.Add(time.Hour)), "%v", i.Due)

		twq(t, "-json", b.queue, "get", "f1").ok(t).decode(t, &i)
		assert.Equal(t, "in-flight", i.State)
		assert.Equal(t, 1, i.Attempt)
		assert.WithinDuration(t, time.Now().Add(time.Hour), i.Deadline, time.Minute)

		twq(t, "-json", b.queue, "get", "d1").ok(t).decode(t, &i)
		assert.Equal(t, "dead", i.State)
		assert.WithinDuration(t, time.Now(), i.DiedAt, time.Minute)

		twq(t, b.queue, "get", "nope").failed(t, exitError, `there is no message "nope"`)
	})
}

func TestList(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		r := twq(t, b.queue, "list", "pending").ok(t)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		require.Len(t, lines, 3, r.stdout)
		assert.Regexp(t, `^ID\s+KIND\s+WHEN\s+ATTEMPT\s+LAST ERROR\s+PAYLOAD$`, lines[0])
		assert.Regexp(t, `^"p1"\s+-\s`, lines[1], "no kind")
		assert.Regexp(t, `^"p2"\s`, lines[2])

		var page listJSON
		twq(t, "-json", b.queue, "list", "pending", "-limit", "1").ok(t).decode(t, &page)
		require.Len(t, page.Messages, 1)
		assert.Equal(t, "p1", page.Messages[0].ID)
		require.NotEmpty(t, page.NextCursor)
		twq(t, "-json", b.queue, "list", "pending", "-limit", "1", "-cursor", page.NextCursor).ok(t).decode(t, &page)
		require.Len(t, page.Messages, 1)
		assert.Equal(t, "p2", page.Messages[0].ID)

		twq(t, "-json", b.queue, "list", "in-flight").ok(t).decode(t, &page)
		require.Len(t, page.Messages, 1)
		assert.Equal(t, "f1", page.Messages[0].ID)
		assert.Empty(t, page.NextCursor)

		twq(t, "-json", b.queue, "list", "dead").ok(t).decode(t, &page)
		require.Len(t, page.Messages, 1)
		assert.Equal(t, "d1", page.Messages[0].ID)
	})
}

// TestInspectionWritesNothingToTheFile: get and list read twq's private
// snapshot of the file.
func TestInspectionWritesNothingToTheFile(t *testing.T) {
	b := newFileBackend(t)
	check := b.unchanged(t)
	twq(t, b.queue, "get", "p1").ok(t)
	twq(t, b.queue, "list", "dead", "-json").ok(t)
	check()
}

func TestInspectionUsageErrors(t *testing.T) {
	b := newFileBackend(t)
	twq(t, b.queue, "get").failed(t, exitUsage, "get: missing the ID")
	twq(t, b.queue, "list").failed(t, exitUsage, "list: missing the state")
	twq(t, b.queue, "list", "sleeping").failed(t, exitUsage, `unknown state "sleeping"`)
	twq(t, b.queue, "list", "dead", "-limit", "0").failed(t, exitUsage, "-limit must be positive")
}
