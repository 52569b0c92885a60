package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(removingBinary{m}) }

// result is what a run of twq printed, and its exit code.
type result struct {
	code           int
	stdout, stderr string
}

// twq runs the command in this process with args and an empty stdin.
func twq(t *testing.T, args ...string) result {
	t.Helper()
	return twqStdin(t, strings.NewReader(""), args...)
}

func twqStdin(t *testing.T, stdin io.Reader, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, stdin, &out, &errOut)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// ok checks that r succeeded, with nothing on stderr.
func (r result) ok(t *testing.T) result {
	t.Helper()
	require.Equal(t, exitOK, r.code, "stderr: %s", r.stderr)
	require.Empty(t, r.stderr)
	return r
}

// failed checks that r failed with code, one line on stderr that contains
// every one of want, and nothing on stdout.
func (r result) failed(t *testing.T, code int, want ...string) {
	t.Helper()
	require.Equal(t, code, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	require.Empty(t, r.stdout)
	require.True(t, strings.HasPrefix(r.stderr, "twq: "), r.stderr)
	require.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %q", r.stderr)
	for _, w := range want {
		require.Contains(t, r.stderr, w)
	}
	if code == exitUsage {
		require.Contains(t, r.stderr, "twq -h")
	}
}

// decode parses r's stdout as JSON into v.
func (r result) decode(t *testing.T, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal([]byte(r.stdout), v), r.stdout)
}

// The seeded queue: two pending messages (one with a payload that is not
// UTF-8), one in flight, one dead.
var (
	binaryPayload = []byte{0xff, 0xfe, 0x00, 'x'}
	pendingSoon   = durable.Message{ID: "p1", Payload: []byte("hello")}
	pendingLater  = durable.Message{ID: "p2", Payload: binaryPayload}
)

// seed fills s with the seeded queue and returns p1's due time.
func seed(t *testing.T, s durable.Store) time.Time {
	t.Helper()
	ctx := context.Background()
	soon := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	p1, p2 := pendingSoon, pendingLater
	p1.Due, p2.Due = soon, soon.Add(time.Hour)
	require.NoError(t, s.Enqueue(ctx, []durable.Message{
		p1, p2,
		{ID: "f1", Payload: []byte("in flight")},
		{ID: "d1", Payload: []byte("dead one")},
	}))
	c, err := s.Claim(ctx, store.ClaimParams{Limit: 10, Lease: time.Hour})
	require.NoError(t, err)
	require.Len(t, c.Leases, 2, "f1 and d1 are due")
	for _, l := range c.Leases {
		if l.ID == "d1" {
			require.NoError(t, s.Retry(ctx, store.RetryParams{Lease: store.LeaseRef{ID: l.ID, Token: l.Token}, Dead: true, Error: "card declined"}))
		}
	}
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, durable.Stats{Pending: 2, InFlight: 1, Dead: 1, NextDue: st.NextDue}, st)
	require.True(t, st.NextDue.Equal(soon), "next due %v, want %v", st.NextDue, soon)
	return soon
}
