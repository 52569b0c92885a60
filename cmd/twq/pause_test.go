package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestPauseAndResume: pause sets the flag in the queue (file or Redis),
// stats shows it, and resume clears it; both are idempotent.
func TestPauseAndResume(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		r := twq(t, b.queue, "pause").ok(t)
		assert.Contains(t, r.stdout, "paused")
		assert.True(t, b.stats(t).Paused)
		assert.Regexp(t, `(?m)^paused\s+yes$`, twq(t, b.queue, "stats").ok(t).stdout)
		var st statsJSON
		twq(t, "-json", b.queue, "stats").ok(t).decode(t, &st)
		assert.True(t, st.Paused)
		twq(t, b.queue, "pause").ok(t)

		var d doneJSON
		twq(t, "-json", b.queue, "resume").ok(t).decode(t, &d)
		assert.Equal(t, doneJSON{Action: "resume"}, d)
		assert.False(t, b.stats(t).Paused)
		assert.Regexp(t, `(?m)^paused\s+no$`, twq(t, b.queue, "stats").ok(t).stdout)
		twq(t, b.queue, "resume").ok(t)
		assert.Equal(t, 2, b.stats(t).Pending, "the messages are as they were")

		twq(t, b.queue, "pause", "extra").failed(t, exitUsage, "unexpected argument")
	})
}
