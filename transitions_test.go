package timingwheel

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The table of transitions in timer.go's comment is the one move checks
// in a build with the tag timingwheel_debug.
func TestTransitionTableMatchesTheDoc(t *testing.T) {
	src, err := os.ReadFile("timer.go")
	require.NoError(t, err)
	var rows [][3]string
	in := false
	for _, line := range strings.Split(string(src), "\n") {
		fields := strings.Fields(strings.TrimPrefix(line, "//"))
		switch {
		case len(fields) >= 3 && fields[0] == "from" && fields[1] == "to" && fields[2] == "function":
			in = true
		case in && len(fields) < 3:
			in = false
		case in:
			rows = append(rows, [3]string{fields[0], fields[1], fields[2]})
		}
	}
	var want [][3]string
	for _, tr := range transitions {
		want = append(want, [3]string{tr.from, tr.to, tr.by})
	}
	assert.Equal(t, want, rows)
}

func TestCheckMoveRefusesWhatTheTableLacks(t *testing.T) {
	msg := func(f func()) (v any) {
		defer func() { v = recover() }()
		f()
		return nil
	}
	assert.Contains(t, msg(func() { checkMove(withStatus(kindFunc, statusIdle), withStatus(kindFunc, statusFired), byCAS) }),
		"moved a timer from idle to fired, which timer.go's table does not allow")
	assert.Contains(t, msg(func() { checkMove(kindFunc|statusFired, kindChan, byCAS) }), "changed a timer's kind")
}
