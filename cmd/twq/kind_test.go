package main

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/memstore"
)

// twqOn runs twq's command line args, whose <queue> is a placeholder, on
// the store s: the command's parsing, action and printing, without
// opening a queue. The in-memory store keeps kinds, whichever backend
// does not yet.
func twqOn(t *testing.T, s durable.Store, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	inv, err := parseCommandLine(args, strings.NewReader(""), &errOut)
	if err == nil && inv != nil {
		err = inv.act(context.Background(), &handle{store: s, close: func() {}}, &printer{w: &out, json: inv.opts.json})
	}
	return result{code: reportError(&errOut, err), stdout: out.String(), stderr: errOut.String()}
}

// A kind a producer wrote with terminal controls: it sets the title.
const evilKind = "mail\x1b]0;pwned\x07\u009b"

// kindsStore returns an in-memory store with six pending messages, in
// due order: p1 email, p2 without a kind, p3 sms, p4 email, p5 of
// evilKind, p6 without a kind.
func kindsStore(t *testing.T) durable.Store {
	t.Helper()
	s := memstore.New(nil)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	base := time.Now().Add(time.Hour)
	var msgs []durable.Message
	for i, kind := range []string{"email", "", "sms", "email", evilKind, ""} {
		msgs = append(msgs, durable.Message{ID: fmt.Sprintf("p%d", i+1), Kind: kind, Due: base.Add(time.Duration(i) * time.Second)})
	}
	require.NoError(t, s.Enqueue(context.Background(), msgs))
	return s
}

// listed returns the IDs of list's table, in order.
func listed(stdout string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^"([^"]+)"`).FindAllStringSubmatch(stdout, -1) {
		out = append(out, m[1])
	}
	return out
}

// list shows each message's kind in a KIND column: quoted, or - for none,
// escaped as IDs are.
func TestListShowsTheKind(t *testing.T) {
	s := kindsStore(t)
	r := twqOn(t, s, "mem", "list", "pending").ok(t)
	assertNoControls(t, r.stdout)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 7, r.stdout)
	assert.Regexp(t, `^ID\s+KIND\s+WHEN\s+ATTEMPT\s+LAST ERROR\s+PAYLOAD$`, lines[0])
	assert.Regexp(t, `^"p1"\s+"email"\s+\S+ \(in `, lines[1])
	assert.Regexp(t, `^"p2"\s+-\s+\S+ \(in `, lines[2])
	assert.Regexp(t, `^"p3"\s+"sms"\s`, lines[3])
	assert.Contains(t, lines[5], `"mail\x1b]0;pwned\a\u009b"`, "the kind escaped, quoted")
}

// list -kind K shows the messages of kind K, and -kind "" those without
// one; pages go on by the cursor printed after them.
func TestListByKind(t *testing.T) {
	s := kindsStore(t)
	for _, c := range []struct {
		kind string
		want []string
	}{
		{"email", []string{"p1", "p4"}},
		{"", []string{"p2", "p6"}},
		{"sms", []string{"p3"}},
		{evilKind, []string{"p5"}},
	} {
		r := twqOn(t, s, "mem", "list", "pending", "-kind", c.kind).ok(t)
		assertNoControls(t, r.stdout)
		assert.Equal(t, c.want, listed(r.stdout), "%q", c.kind)
		assert.NotContains(t, r.stdout, "more:", "%q: all on one page", c.kind)

		var page listJSON
		twqOn(t, s, "-json", "mem", "list", "pending", "-kind", c.kind).ok(t).decode(t, &page)
		var ids []string
		for _, m := range page.Messages {
			assert.Equal(t, c.kind, m.Kind)
			ids = append(ids, m.ID)
		}
		assert.Equal(t, c.want, ids, "%q", c.kind)
		assert.Empty(t, page.NextCursor)
		require.NotNil(t, page.Scanned)
		assert.Equal(t, 6, *page.Scanned, "read them all")
	}

	// One a page, by the cursor.
	var got []string
	args := []string{"mem", "list", "pending", "-kind", "email", "-limit", "1"}
	for range 10 {
		r := twqOn(t, s, args...).ok(t)
		got = append(got, listed(r.stdout)...)
		m := regexp.MustCompile(`(?m)^read (\d+) messages to find these \(at most 5000 a page\); more: -cursor "([^"]+)"$`).FindStringSubmatch(r.stdout)
		if m == nil {
			break
		}
		args = []string{"mem", "list", "pending", "-kind", "email", "-limit", "1", "-cursor", m[2]}
	}
	assert.Equal(t, []string{"p1", "p4"}, got)

	r := twqOn(t, s, "mem", "list", "pending", "-kind", "fax").ok(t)
	assert.Equal(t, "no messages of kind \"fax\"\n", r.stdout)
	r = twqOn(t, s, "mem", "list", "dead", "-kind", "").ok(t)
	assert.Equal(t, "no messages without a kind\n", r.stdout)

	// Without -kind, JSON has no scanned.
	r = twqOn(t, s, "-json", "mem", "list", "pending").ok(t)
	assert.NotContains(t, r.stdout, "scanned")
	assert.Contains(t, r.stdout, `"kind": "email"`)
}

// list -kind reads at most maxScan messages a page, and says so.
func TestListByKindIsBounded(t *testing.T) {
	s := memstore.New(nil)
	defer func() { require.NoError(t, s.Close()) }()
	base := time.Now().Add(time.Hour)
	msgs := make([]durable.Message, maxScan+1)
	for i := range msgs {
		msgs[i] = durable.Message{ID: fmt.Sprintf("m%05d", i), Kind: "bulk", Due: base.Add(time.Duration(i) * time.Millisecond)}
	}
	msgs[maxScan].Kind = "rare"
	require.NoError(t, s.Enqueue(context.Background(), msgs))
	r := twqOn(t, s, "mem", "list", "pending", "-kind", "rare").ok(t)
	m := regexp.MustCompile(`^no messages of kind "rare"\nread 5000 messages to find these \(at most 5000 a page\); more: -cursor "([^"]+)"\n$`).FindStringSubmatch(r.stdout)
	require.NotNil(t, m, r.stdout)
	r = twqOn(t, s, "mem", "list", "pending", "-kind", "rare", "-cursor", m[1]).ok(t)
	assert.Equal(t, []string{fmt.Sprintf("m%05d", maxScan)}, listed(r.stdout))
}

// get shows the kind, the max attempts and the timeout: the message's, or
// what applies without them.
func TestGetShowsKindAndLimits(t *testing.T) {
	s := memstore.New(nil)
	defer func() { require.NoError(t, s.Close()) }()
	later := time.Now().Add(time.Hour)
	require.NoError(t, s.Enqueue(context.Background(), []durable.Message{
		{ID: "full", Kind: evilKind, MaxAttempts: 5, Timeout: 90 * time.Second, Due: later},
		{ID: "bare", Due: later},
	}))

	r := twqOn(t, s, "mem", "get", "full").ok(t)
	assertNoControls(t, r.stdout)
	assert.Regexp(t, `(?m)^kind\s+"mail\\x1b]0;pwned\\a\\u009b"$`, r.stdout)
	assert.Regexp(t, `(?m)^max attempts\s+5$`, r.stdout)
	assert.Regexp(t, `(?m)^timeout\s+1m30s$`, r.stdout)
	r = twqOn(t, s, "mem", "get", "bare").ok(t)
	assert.Regexp(t, `(?m)^kind\s+none$`, r.stdout)
	assert.Regexp(t, `(?m)^max attempts\s+the queue's$`, r.stdout)
	assert.Regexp(t, `(?m)^timeout\s+none$`, r.stdout)

	var i infoJSON
	r = twqOn(t, s, "-json", "mem", "get", "full").ok(t)
	assertNoControls(t, r.stdout)
	r.decode(t, &i)
	assert.Equal(t, evilKind, i.Kind)
	assert.Equal(t, 5, i.MaxAttempts)
	assert.Equal(t, "1m30s", i.Timeout)
	r = twqOn(t, s, "-json", "mem", "get", "bare").ok(t)
	for _, field := range []string{`"kind"`, `"max_attempts"`, `"timeout"`} {
		assert.NotContains(t, r.stdout, field, "absent when unset")
	}
}

func TestListKindUsage(t *testing.T) {
	s := memstore.New(nil)
	defer func() { require.NoError(t, s.Close()) }()
	twqOn(t, s, "mem", "list", "pending", "-kind").failed(t, exitUsage, "flag needs an argument: -kind")
	r := twq(t, "-h")
	assert.Contains(t, r.stderr, "list pending|in-flight|dead [-limit N] [-cursor C] [-kind K]")
	assert.Contains(t, r.stderr, "-kind K shows only those of kind K (-kind ''")
	assert.Contains(t, r.stderr, "reading at most 5000 messages a page")
	assert.Contains(t, r.stderr, "IDs, kinds, payloads and error texts are printed escaped")
	assert.Contains(t, r.stderr, `(with "scanned", how many messages were read, after -kind)`)
	assert.Equal(t, 5000, maxScan, "the help says 5000")
}

// On every backend, list -kind and get read a message's kind back.
func TestKindsOnEveryBackend(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		s, closeStore := b.store(t)
		err := s.Enqueue(context.Background(), []durable.Message{{ID: "k1", Kind: "email", MaxAttempts: 3, Timeout: time.Minute, Due: time.Now().Add(3 * time.Hour)}})
		closeStore()
		require.NoError(t, err)

		check := b.unchanged(t)
		r := twq(t, b.queue, "list", "pending", "-kind", "email").ok(t)
		assert.Equal(t, []string{"k1"}, listed(r.stdout))
		assert.Regexp(t, `(?m)^"k1"\s+"email"\s`, r.stdout)
		r = twq(t, b.queue, "list", "pending", "-kind", "").ok(t)
		assert.Equal(t, []string{"p1", "p2"}, listed(r.stdout))
		r = twq(t, b.queue, "get", "k1").ok(t)
		assert.Regexp(t, `(?m)^kind\s+"email"$`, r.stdout)
		assert.Regexp(t, `(?m)^max attempts\s+3$`, r.stdout)
		assert.Regexp(t, `(?m)^timeout\s+1m0s$`, r.stdout)
		check()
	})
}
