package timingwheel_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The README's Quick start must compile and do what it shows: its code block
// is the body of Example_quickStart, which go test compiles and runs.
func TestReadmeQuickStartIsExample(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	block := codeBlockAfter(t, string(readme), "## Quick start")

	src, err := os.ReadFile("example_quickstart_test.go")
	require.NoError(t, err)
	body := functionBody(t, string(src), "func Example_quickStart() {")

	require.Equal(t, body, block, "README's Quick start differs from Example_quickStart: copy the example's body into the README")
}

// codeBlockAfter returns the lines of the first ```go block after heading.
func codeBlockAfter(t *testing.T, doc, heading string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "\n"+heading+"\n")
	require.True(t, ok, "no %q heading", heading)
	_, rest, ok = strings.Cut(rest, "```go\n")
	require.True(t, ok, "no go code block after %q", heading)
	block, _, ok := strings.Cut(rest, "```\n")
	require.True(t, ok, "unterminated code block after %q", heading)
	return block
}

// functionBody returns the statements of the function that opens with
// header, one tab of indentation removed, up to its Output comment.
func functionBody(t *testing.T, src, header string) string {
	t.Helper()
	_, rest, ok := strings.Cut(src, header+"\n")
	require.True(t, ok, "no %q", header)
	body, _, ok := strings.Cut(rest, "\t// Output:\n")
	require.True(t, ok, "no Output comment in %q", header)
	var b strings.Builder
	for _, line := range strings.SplitAfter(body, "\n") {
		b.WriteString(strings.TrimPrefix(line, "\t"))
	}
	return b.String()
}
