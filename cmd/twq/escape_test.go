package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/boltstore"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

func TestEscapeText(t *testing.T) {
	for in, want := range map[string]string{
		"card declined":            "card declined",
		"\x1b]0;pwned\x07":         `\x1b]0;pwned\x07`,
		"\x1b[2K\rfake line":       `\x1b[2K\rfake line`,
		"two\nlines\tand a tab":    `two\nlines\tand a tab`,
		"del\x7f c1\u009b[31m":     `del\x7f c1\u009b[31m`,
		"bidi \u202eevil":          `bidi \u202eevil`,
		"not utf-8 \xff\xfe":       `not utf-8 \xff\xfe`,
		`a \x1b that was text`:     `a \\x1b that was text`,
		"héllo, 世界 ✓":              "héllo, 世界 ✓",
		"nul \x00 and bell \a end": `nul \x00 and bell \x07 end`,
	} {
		assert.Equal(t, want, escapeText(in), "%q", in)
	}
	assert.Equal(t, `a \x1b that was text: \x1b`, escapeControls("a \\x1b that was text: \x1b"))
	assert.Equal(t, `twq: x \x1b[2K y`, "twq: "+oneLine("x\n\x1b[2K\t y"))
}

func TestEscapeJSON(t *testing.T) {
	v := map[string]string{"e": "del\x7f c1\u0085\u009b end \u00e9 \x1b", "k\u0090": "v"}
	var p printer
	var out strings.Builder
	p.w = &out
	require.NoError(t, p.encode(v))
	assertNoControls(t, out.String())
	assert.Contains(t, out.String(), `\u007f c1\u0085\u009b end é \u001b`)
	var back map[string]string
	require.NoError(t, json.Unmarshal([]byte(out.String()), &back))
	assert.Equal(t, v, back, "the escapes decode to the same strings")
}

// assertNoControls checks that s holds no byte a terminal acts on but
// the newlines and the table's spaces: no C0 control but \n, no DEL, no
// C1 control.
func assertNoControls(t *testing.T, s string) {
	t.Helper()
	for i, r := range s {
		if r == '\n' {
			continue
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || (r == utf8.RuneError) {
			t.Fatalf("a raw %U at byte %d of %q", r, i, s)
		}
	}
}

// TestBinaryEscapesQueueData: a dead letter whose error text, ID and
// payload hold terminal control sequences (set the title, erase the line
// and write a fake one), shown by the real binary in each command that
// prints it: the output holds no raw control character, and shows them
// as escapes.
func TestBinaryEscapesQueueData(t *testing.T) {
	bin := twqBinary(t)
	path := filepath.Join(t.TempDir(), "queue.db")
	s, err := boltstore.Open(path)
	require.NoError(t, err)
	ctx := context.Background()
	const (
		id      = "order-\x1b[31m1\u009b"
		lastErr = "\x1b]0;pwned\x07card declined\n\x1b[2K\rfake line\x7f"
		payload = "pay\x1b]52;c;cHduZWQ=\x07load"
		kind    = "mail\x1b[8m\u009b"
	)
	require.NoError(t, s.Enqueue(ctx, []durable.Message{{ID: id, Kind: kind, Payload: []byte(payload)}}))
	stored, err := s.Get(ctx, id)
	require.NoError(t, err)
	require.Equal(t, kind, stored.Kind, "the file keeps the kind")
	c, err := s.Claim(ctx, store.ClaimParams{Limit: 1, Lease: time.Hour})
	require.NoError(t, err)
	require.Len(t, c.Leases, 1)
	require.NoError(t, s.Retry(ctx, store.RetryParams{Lease: store.LeaseRef{ID: id, Token: c.Leases[0].Token}, Dead: true, Error: lastErr}))
	require.NoError(t, s.Close())

	runBin := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
		require.NoError(t, err, "%s", out)
		assertNoControls(t, string(out))
		return string(out)
	}
	out := runBin(path, "list", "dead")
	assert.Contains(t, out, `\x1b]0;pwned\x07card declined\n\x1b[2K\rfake line\x7f`)
	assert.Contains(t, out, `"order-\x1b[31m1\u009b"`)
	assert.Contains(t, out, `"mail\x1b[8m\u009b"`)
	out = runBin(path, "get", id)
	assert.Contains(t, out, `\x1b]0;pwned\x07card declined\n\x1b[2K\rfake line\x7f`)
	assert.Contains(t, out, `"mail\x1b[8m\u009b"`)
	assert.Contains(t, out, `"pay\x1b]52;c;cHduZWQ=\aload"`)
	assert.Contains(t, runBin(path, "dead"), `"order-\x1b[31m1\u009b"`)

	var info infoJSON
	require.NoError(t, json.Unmarshal([]byte(runBin("-json", path, "get", id)), &info))
	assert.Equal(t, lastErr, info.LastError, "JSON keeps the text, escaped")
	assert.Equal(t, id, info.ID)
	var page listJSON
	require.NoError(t, json.Unmarshal([]byte(runBin("-json", path, "list", "dead")), &page))
	require.Len(t, page.Messages, 1)
	assert.Equal(t, lastErr, page.Messages[0].LastError)
	runBin("-json", path, "dead")

	// An error that quotes an ID from the command line is escaped too.
	ctx2, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out2, err := exec.CommandContext(ctx2, bin, path, "cancel", "no\x1b]0;x\x07such").CombinedOutput()
	require.Error(t, err)
	assertNoControls(t, string(out2))
}
