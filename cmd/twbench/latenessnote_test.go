package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLatenessNote checks that the note is two lines naming the tick's
// quarter and the timerfd, and only when fire or queue ran.
func TestLatenessNote(t *testing.T) {
	for _, args := range [][]string{{"-quick", "fire"}, {"-quick", "queue", "idle"}, {"-quick"}} {
		o, err := parseArgs(args)
		require.NoError(t, err)
		var b bytes.Buffer
		require.NoError(t, writeLatenessNote(&b, o))
		lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		require.Len(t, lines, 2, "%v", args)
		assert.Contains(t, lines[0], "quarter of its 1ms tick its deadline falls in (up to 250µs late)")
		assert.Contains(t, lines[1], "timerfd")
	}
	o, err := parseArgs([]string{"-quick", "-tick", "5ms", "fire"})
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, writeLatenessNote(&b, o))
	assert.Contains(t, b.String(), "quarter of its 5ms tick its deadline falls in (up to 1.25ms late)")

	o, err = parseArgs([]string{"-quick", "idle", "startstop"})
	require.NoError(t, err)
	b.Reset()
	require.NoError(t, writeLatenessNote(&b, o))
	assert.Empty(t, b.String())
}

// TestRunWritesTheLatenessNoteUnderQuick checks that run puts the note
// under the table of a -quick run, and not under a run at full size.
func TestRunWritesTheLatenessNoteUnderQuick(t *testing.T) {
	stdout, _ := tinyRun(t, "-quick", "fire")
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	require.Greater(t, len(lines), 3)
	assert.Equal(t, ratioLegend, lines[len(lines)-3])
	assert.Contains(t, lines[len(lines)-2], "never before")

	stdout, _ = tinyRun(t, "fire")
	assert.NotContains(t, stdout, "never before")
	assert.True(t, strings.HasSuffix(stdout, ratioLegend+"\n"))
}
