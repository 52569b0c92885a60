package durableweb

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// killMessage makes m dead with the error text cause, as kill does: q
// must have WithMaxAttempts(1), and m must be the only message due.
func killMessage(t *testing.T, q *durable.Queue, m durable.Message, cause string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, q.Enqueue(ctx, m))
	d, err := q.Receive(ctx)
	require.NoError(t, err)
	require.Equal(t, m.ID, d.ID)
	require.NoError(t, d.RetryWithError(ctx, time.Millisecond, errors.New(cause)))
	info, err := q.Get(ctx, m.ID)
	require.NoError(t, err)
	require.Equal(t, durable.Dead, info.State)
	require.Equal(t, m.Kind, info.Kind, "the store keeps kinds")
}

// ids returns the IDs of a list page's rows, in order.
func ids(body string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<a class="id" href="message\?id=([^"]+)"`).FindAllStringSubmatch(body, -1) {
		id, _ := url.QueryUnescape(strings.ReplaceAll(m[1], "&amp;", "&"))
		out = append(out, id)
	}
	return out
}

// kindsOfRows returns the text of a list page's kind cells, in order.
func kindsOfRows(body string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<td data-label="Kind" class="kind">(?:<a class="kind" [^>]*>([^<]*)</a>)?</td>`).FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// Every list shows each message's kind, empty for none, linked to the
// list of that kind.
func TestListsShowTheKind(t *testing.T) {
	q := newQueue(t, durable.WithMaxAttempts(1))
	ctx := context.Background()
	killMessage(t, q, durable.Message{ID: "d1", Kind: "email"}, "boom")
	killMessage(t, q, durable.Message{ID: "d2"}, "boom")
	require.NoError(t, q.Enqueue(ctx, durable.Message{ID: "f1", Kind: "report"}))
	dl, err := q.Receive(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, dl.Ack(ctx)) }()
	later := time.Now().Add(time.Hour)
	require.NoError(t, q.Enqueue(ctx,
		durable.Message{ID: "p1", Kind: "sms", Due: later},
		durable.Message{ID: "p2", Due: later.Add(time.Second)}))
	_, srv := newDashboard(t, q)

	for path, want := range map[string][]string{
		"/queue/pending":   {"sms", ""},
		"/queue/in-flight": {"report"},
		"/queue/dead":      {"email", ""},
	} {
		resp, body := get(t, srv, path)
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		assert.Contains(t, body, "<th>ID</th><th>Kind</th>", path)
		assert.Equal(t, want, kindsOfRows(body), path)
	}
	_, body := get(t, srv, "/queue/pending")
	assert.Contains(t, body, `<a class="kind" href="pending?kind=sms&amp;prefix=&amp;limit=25" title="sms">sms</a>`)
}

// The kind filter keeps the messages of one kind (or those without one),
// composes with the ID prefix, and the pager's links keep both.
func TestListFiltersByKind(t *testing.T) {
	q := newQueue(t)
	ctx := context.Background()
	base := time.Now().Add(time.Hour)
	var all []durable.Message
	for i := range 12 {
		m := durable.Message{ID: fmt.Sprintf("%s-%02d", []string{"eu", "us"}[i%2], i), Due: base.Add(time.Duration(i) * time.Second)}
		switch i % 3 {
		case 0:
			m.Kind = "email"
		case 1:
			m.Kind = "sms"
		}
		all = append(all, m)
	}
	require.NoError(t, q.Enqueue(ctx, all...))
	want := func(keep func(m durable.Message) bool) []string {
		var out []string
		for _, m := range all {
			if keep(m) {
				out = append(out, m.ID)
			}
		}
		return out
	}
	_, srv := newDashboard(t, q)

	cases := []struct {
		query string
		keep  func(m durable.Message) bool
		text  string
	}{
		{"kind=email", func(m durable.Message) bool { return m.Kind == "email" }, "of kind “email”"},
		{"nokind=1", func(m durable.Message) bool { return m.Kind == "" }, "without a kind"},
		{"kind=email&prefix=eu-", func(m durable.Message) bool { return m.Kind == "email" && strings.HasPrefix(m.ID, "eu-") },
			"of kind “email” with an ID starting with “eu-”"},
		{"nokind=1&prefix=us-", func(m durable.Message) bool { return m.Kind == "" && strings.HasPrefix(m.ID, "us-") },
			"without a kind with an ID starting with “us-”"},
		{"kind=fax", func(durable.Message) bool { return false }, "of kind “fax”"},
	}
	for _, c := range cases {
		// Page by the links, one message a page.
		var got []string
		path := "/queue/pending?limit=1&" + c.query
		for range 20 {
			resp, body := get(t, srv, path)
			require.Equal(t, http.StatusOK, resp.StatusCode, path)
			got = append(got, ids(body)...)
			next := regexp.MustCompile(`rel="next" href="([^"]+)"`).FindStringSubmatch(body)
			if next == nil {
				if len(got) == 0 {
					assert.Contains(t, body, "No pending messages "+c.text+".", c.query)
				}
				break
			}
			path = "/queue/" + strings.ReplaceAll(next[1], "&amp;", "&")
		}
		assert.Equal(t, want(c.keep), got, c.query)
	}

	// The form shows the filter it applied.
	_, body := get(t, srv, "/queue/pending?kind=email&prefix=eu-")
	assert.Contains(t, body, `<input type="search" name="kind" value="email" autocomplete="off">`)
	assert.Contains(t, body, `<input type="search" name="prefix" value="eu-" autocomplete="off">`)
	assert.Contains(t, body, `<input type="checkbox" name="nokind" value="1"> without a kind`)
	_, body = get(t, srv, "/queue/pending?nokind=1")
	assert.Contains(t, body, `<input type="checkbox" name="nokind" value="1" checked> without a kind`)
	assert.Contains(t, body, `<a href="pending?limit=25">clear</a>`)

	// A kind and no kind at once is refused.
	resp, body := get(t, srv, "/queue/pending?kind=email&nokind=1")
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, body, "give a kind or tick “without a kind”, not both")
	assert.Empty(t, ids(body))
}

// A filtered list reads at most maxScan messages a page, and says so.
func TestKindFilterIsBounded(t *testing.T) {
	q := newQueue(t)
	ctx := context.Background()
	base := time.Now().Add(time.Hour)
	msgs := make([]durable.Message, maxScan+1)
	for i := range msgs {
		msgs[i] = durable.Message{ID: fmt.Sprintf("m-%05d", i), Kind: "bulk", Due: base.Add(time.Duration(i) * time.Millisecond)}
	}
	msgs[maxScan].Kind = "rare"
	require.NoError(t, q.Enqueue(ctx, msgs...))
	_, srv := newDashboard(t, q)
	_, body := get(t, srv, "/queue/pending?kind=rare")
	assert.Empty(t, ids(body), "not within the first maxScan")
	assert.Contains(t, body, fmt.Sprintf("Read %d messages to find these (a page reads at most %d); more may follow.", maxScan, maxScan))
	next := regexp.MustCompile(`rel="next" href="([^"]+)"`).FindStringSubmatch(body)
	require.NotNil(t, next)
	assert.Contains(t, next[1], "kind=rare")
	_, body = get(t, srv, "/queue/"+strings.ReplaceAll(next[1], "&amp;", "&"))
	assert.Equal(t, []string{fmt.Sprintf("m-%05d", maxScan)}, ids(body), "the next page goes on")
}

// "Requeue all" on the dead list follows the kind filter, alone or with
// the ID prefix, and says which messages it requeues.
func TestRequeueAllFollowsTheKindFilter(t *testing.T) {
	q := newQueue(t, durable.WithMaxAttempts(1))
	ctx := context.Background()
	for _, m := range []durable.Message{
		{ID: "eu-1", Kind: "email"}, {ID: "eu-2", Kind: "sms"}, {ID: "eu-3"},
		{ID: "us-1", Kind: "email"}, {ID: "us-2"}, {ID: "us-3", Kind: "email"},
	} {
		killMessage(t, q, m, "boom")
	}
	_, srv := newDashboard(t, q)
	same := map[string]string{"Sec-Fetch-Site": "same-origin"}
	dead := func() []string {
		var out []string
		infos, _, err := q.List(ctx, durable.Dead, "", 100)
		require.NoError(t, err)
		for _, in := range infos {
			out = append(out, in.ID)
		}
		return out
	}

	_, body := get(t, srv, "/queue/dead?kind=email&prefix=us-")
	assert.Contains(t, body, `<input type="hidden" name="kind" value="email">`)
	assert.Contains(t, body, `<input type="hidden" name="prefix" value="us-">`)
	assert.NotContains(t, body, `<input type="hidden" name="nokind"`)
	assert.Contains(t, body, `data-confirm="Requeue every dead message of kind “email” with an ID starting with “us-”?"`)
	assert.Contains(t, body, ">Requeue all dead of kind “email” starting with “us-”</button>")
	tok := token(t, body)
	resp, _ := post(t, srv, "/queue/requeue-all", url.Values{"token": {tok}, "kind": {"email"}, "prefix": {"us-"}}, same)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, "dead?done=requeued-all&kind=email&n=2&prefix=us-", resp.Header.Get("Location"))
	assert.Equal(t, []string{"eu-1", "eu-2", "eu-3", "us-2"}, dead())
	_, body = get(t, srv, "/queue/"+resp.Header.Get("Location"))
	assert.Contains(t, body, "Requeued 2 dead messages of kind &#34;email&#34; with an ID starting with &#34;us-&#34;: they are pending, due now.")
	assert.Contains(t, body, `<input type="search" name="kind" value="email"`, "back to the same filter")

	_, body = get(t, srv, "/queue/dead?nokind=1")
	assert.Contains(t, body, `<input type="hidden" name="nokind" value="1">`)
	assert.Contains(t, body, `data-confirm="Requeue every dead message without a kind?"`)
	assert.Contains(t, body, ">Requeue all dead without a kind</button>")
	resp, _ = post(t, srv, "/queue/requeue-all", url.Values{"token": {tok}, "nokind": {"1"}}, same)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, "dead?done=requeued-all&n=2&nokind=1", resp.Header.Get("Location"))
	assert.Equal(t, []string{"eu-1", "eu-2"}, dead())

	resp, body = post(t, srv, "/queue/requeue-all", url.Values{"token": {tok}, "nokind": {"1"}, "kind": {"sms"}}, same)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, body, "not both")
	assert.Equal(t, []string{"eu-1", "eu-2"}, dead(), "refused: nothing requeued")

	_, body = get(t, srv, "/queue/dead?kind=email")
	assert.Contains(t, body, ">Requeue all dead of kind “email”</button>")
	resp, _ = post(t, srv, "/queue/requeue-all", url.Values{"token": {tok}, "kind": {"email"}}, same)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, "dead?done=requeued-all&kind=email&n=1", resp.Header.Get("Location"))
	assert.Equal(t, []string{"eu-2"}, dead())
}

// The message page shows the kind (or none), and the message's own max
// attempts and timeout when it has them.
func TestMessagePageShowsKindAndLimits(t *testing.T) {
	q := newQueue(t)
	ctx := context.Background()
	later := time.Now().Add(time.Hour)
	require.NoError(t, q.Enqueue(ctx,
		durable.Message{ID: "full", Kind: "email", MaxAttempts: 5, Timeout: 90 * time.Second, Due: later},
		durable.Message{ID: "bare", Due: later}))
	_, srv := newDashboard(t, q)

	_, body := get(t, srv, "/queue/message?id=full")
	assert.Contains(t, body, `<dt>Kind</dt><dd data-field="kind"><a class="kind" href="pending?kind=email">email</a></dd>`)
	assert.Contains(t, body, `<dt>Max attempts</dt><dd><span data-field="max-attempts">5</span>`)
	assert.Contains(t, body, `<dt>Timeout</dt><dd><span data-field="timeout">1m30s</span>`)

	_, body = get(t, srv, "/queue/message?id=bare")
	assert.Contains(t, body, `<dd data-field="kind"><span class="small">none</span></dd>`)
	assert.NotContains(t, body, "Max attempts")
	assert.NotContains(t, body, "Timeout")
}

// kindTable returns the overview's counts of a state by kind: the text of
// each row's cells.
func kindTable(t *testing.T, body, state string) [][2]string {
	t.Helper()
	start := strings.Index(body, `<section class="kinds" data-kinds="`+state+`">`)
	require.GreaterOrEqual(t, start, 0, "a section for %s", state)
	sec := body[start:]
	sec = sec[:strings.Index(sec, "</section>")]
	var out [][2]string
	tags := regexp.MustCompile(`<[^>]+>`)
	for _, m := range regexp.MustCompile(`(?s)<tr(?: class="others")?><td[^>]*>(.*?)</td><td[^>]*>(.*?)</td></tr>`).FindAllStringSubmatch(sec, -1) {
		out = append(out, [2]string{tags.ReplaceAllString(m[1], ""), m[2]})
	}
	return out
}

// kindNote returns the note under a state's counts by kind.
func kindNote(t *testing.T, body, state string) string {
	t.Helper()
	start := strings.Index(body, `<section class="kinds" data-kinds="`+state+`">`)
	require.GreaterOrEqual(t, start, 0, "a section for %s", state)
	m := regexp.MustCompile(`<p class="small" data-kinds-note>([^<]*)</p>`).FindStringSubmatch(body[start:])
	require.NotNil(t, m)
	return m[1]
}

// The overview counts the pending and the dead messages by kind: the 20
// largest of each, then the others together, each linked to its list.
func TestOverviewCountsByKind(t *testing.T) {
	q := newQueue(t, durable.WithMaxAttempts(1))
	ctx := context.Background()
	killMessage(t, q, durable.Message{ID: "d1", Kind: "report"}, "boom")
	killMessage(t, q, durable.Message{ID: "d2", Kind: "report"}, "boom")
	killMessage(t, q, durable.Message{ID: "d3"}, "boom")
	later := time.Now().Add(time.Hour)
	var msgs []durable.Message
	add := func(kind string, n int) {
		for range n {
			msgs = append(msgs, durable.Message{ID: fmt.Sprintf("p%d", len(msgs)), Kind: kind, Due: later})
		}
	}
	add("email", 30)
	add("", 4)
	add("sms", 4)
	for i := range 20 { // k00 to k19: one each
		add(fmt.Sprintf("k%02d", i), 1)
	}
	require.NoError(t, q.Enqueue(ctx, msgs...))
	_, srv := newDashboard(t, q)
	resp, body := get(t, srv, "/queue/")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, body, "<h2>By kind</h2>")

	want := [][2]string{{"email", "30"}, {"none", "4"}, {"sms", "4"}}
	for i := range 17 {
		want = append(want, [2]string{fmt.Sprintf("k%02d", i), "1"})
	}
	want = append(want, [2]string{"3 other kinds", "3"})
	assert.Equal(t, want, kindTable(t, body, "pending"), "20 kinds, largest first (then by name), and the others")
	assert.Equal(t, "Counted all 58 pending messages.", kindNote(t, body, "pending"))
	assert.Equal(t, [][2]string{{"report", "2"}, {"none", "1"}}, kindTable(t, body, "dead"))
	assert.Equal(t, "Counted all 3 dead messages.", kindNote(t, body, "dead"))
	assert.Contains(t, body, `<a class="kind" href="pending?kind=email">email</a>`)
	assert.Contains(t, body, `<a class="nokind" href="pending?nokind=1">none</a>`)
	assert.Contains(t, body, `<a class="kind" href="dead?kind=report">report</a>`)
	assert.NotContains(t, body, "in-flight?kind", "in flight is not counted")
}

// Without any kind, the overview says so in a line.
func TestOverviewWithoutKinds(t *testing.T) {
	q := newQueue(t)
	require.NoError(t, q.Enqueue(context.Background(), durable.Message{ID: "p1", Due: time.Now().Add(time.Hour)}))
	_, srv := newDashboard(t, q)
	_, body := get(t, srv, "/queue/")
	assert.Contains(t, body, "<h2>By kind</h2>")
	assert.NotContains(t, body, `<section class="kinds"`)
	assert.Contains(t, body, "No message counted has a kind. Counted the one pending message. No dead messages.")
}

// The counts by kind read at most WithKindCounts messages of each state,
// and say so; WithKindCounts(0) turns them off.
func TestKindCountsAreBounded(t *testing.T) {
	q := newQueue(t)
	ctx := context.Background()
	base := time.Now().Add(time.Hour)
	var msgs []durable.Message
	for i := range 12 {
		kind := "early"
		if i >= 5 {
			kind = "late"
		}
		msgs = append(msgs, durable.Message{ID: fmt.Sprintf("p%02d", i), Kind: kind, Due: base.Add(time.Duration(i) * time.Second)})
	}
	require.NoError(t, q.Enqueue(ctx, msgs...))

	_, srv := newDashboard(t, q, WithKindCounts(5))
	_, body := get(t, srv, "/queue/")
	assert.Equal(t, [][2]string{{"early", "5"}}, kindTable(t, body, "pending"), "the first 5, in due order")
	assert.Equal(t, "Counted the first 5 of 12 pending messages (in due order): the count stops at 5 messages or 32 MiB of payloads, whichever comes first.",
		kindNote(t, body, "pending"))

	_, srv = newDashboard(t, q, WithKindCounts(0))
	_, body = get(t, srv, "/queue/")
	assert.NotContains(t, body, "By kind")

	_, srv = newDashboard(t, q, WithKindCounts(-1))
	_, body = get(t, srv, "/queue/")
	assert.NotContains(t, body, "By kind")

	_, srv = newDashboard(t, q)
	_, body = get(t, srv, "/queue/")
	assert.Equal(t, "Counted all 12 pending messages.", kindNote(t, body, "pending"), "10,000 by default")
	assert.Equal(t, 10_000, defaultConfig().kindCount, "WithKindCounts' doc")
	assert.Equal(t, 32<<20, defaultConfig().kindBytes, "WithKindCounts' doc")
}

// The count also stops after kindBytes of payloads, at the end of a page.
func TestKindCountsStopAfterTheirBytes(t *testing.T) {
	q := newQueue(t, durable.WithMaxAttempts(1))
	ctx := context.Background()
	killMessage(t, q, durable.Message{ID: "d0", Kind: "x", Payload: make([]byte, 10)}, "boom")
	killMessage(t, q, durable.Message{ID: "d1", Kind: "x", Payload: make([]byte, 10)}, "boom")
	base := time.Now().Add(time.Hour)
	var msgs []durable.Message
	for i := range 2*kindPage + 1 {
		msgs = append(msgs, durable.Message{ID: fmt.Sprintf("p%03d", i), Kind: "x", Payload: make([]byte, 10), Due: base.Add(time.Duration(i) * time.Millisecond)})
	}
	require.NoError(t, q.Enqueue(ctx, msgs...))
	d := New(q)
	defer d.Close()
	kc := d.countKinds(ctx, durable.Pending, len(msgs), defaultKindCount, 10*kindPage+1)
	assert.Equal(t, 2*kindPage, kc.Read, "stopped after the page that passed the bound")
	assert.False(t, kc.Complete)
	assert.Equal(t, []kindCount{{"x", 2 * kindPage}}, kc.Top)
	assert.Equal(t, "Counted the first 200 of 201 pending messages (in due order): the count stops at 10,000 messages or 1,001 bytes of payloads, whichever comes first.", kc.Note())
	kc = d.countKinds(ctx, durable.Dead, 2, defaultKindCount, 1)
	assert.True(t, kc.Complete, "the first page was the last")
	assert.Equal(t, "Counted all 2 dead messages.", kc.Note())
	kc = d.countKinds(ctx, durable.Dead, 2, 1, defaultKindBytes)
	assert.Equal(t, "Counted the first 1 of 2 dead messages (oldest death first): the count stops at 1 messages or 32 MiB of payloads, whichever comes first.", kc.Note())
}

// Kinds are producers' texts: escaped in every page, their invisible
// characters shown.
func TestKindsAreEscaped(t *testing.T) {
	q := newQueue(t, durable.WithMaxAttempts(1))
	ctx := context.Background()
	const bidi = "\u202egnp.exe"
	killMessage(t, q, durable.Message{ID: "d1", Kind: evilImg}, "boom")
	require.NoError(t, q.Enqueue(ctx,
		durable.Message{ID: "p1", Kind: evilImg, Due: time.Now().Add(time.Hour)},
		durable.Message{ID: "p2", Kind: bidi + "\x1b[31m", Due: time.Now().Add(time.Hour)}))
	_, srv := newDashboard(t, q)
	for _, path := range []string{"/queue/", "/queue/pending", "/queue/dead", "/queue/message?id=p1", "/queue/message?id=d1",
		"/queue/new?id=p1", "/queue/pending?kind=" + url.QueryEscape(evilImg), "/queue/dead?kind=" + url.QueryEscape(evilImg),
		"/queue/dead?done=requeued-all&n=1&kind=" + url.QueryEscape(evilScript)} {
		resp, body := get(t, srv, path)
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		assert.NotContains(t, body, "<img src=x", path)
		assert.NotContains(t, body, "<script>document", path)
		assert.Contains(t, body, "&lt;", path, "the kind is there, escaped")
		assert.Equal(t, 1, strings.Count(body, "<script"), path)
		assert.NotContains(t, body, "\u202e", path)
		assert.NotContains(t, body, "\x1b", path)
	}
	for _, path := range []string{"/queue/", "/queue/pending", "/queue/message?id=p2"} {
		_, body := get(t, srv, path)
		assert.Contains(t, body, `\u202egnp.exe\x1b[31m`, path, "shown as escapes")
	}
	_, body := get(t, srv, "/queue/dead?kind="+url.QueryEscape(evilImg))
	assert.Contains(t, body, "Requeue all dead of kind “&lt;img src=x")
}

func TestVisible(t *testing.T) {
	for in, want := range map[string]string{
		"email":                "email",
		"héllo, 世界":            "héllo, 世界",
		"\u202egnp.exe":        `\u202egnp.exe`,
		"a\u2066b\u2069":       `a\u2066b\u2069`,
		"zero\u200bwidth":      `zero\u200bwidth`,
		"esc\x1b[2K\r\n\t":     `esc\x1b[2K\x0d\x0a\x09`,
		"del\x7f c1\u009b":     `del\x7f c1\u009b`,
		"line\u2028para\u2029": `line\u2028para\u2029`,
		"bad \xff":             `bad \xff`,
		"tag \U000e0041":       `tag \U000e0041`,
	} {
		assert.Equal(t, want, visible(in), "%q", in)
	}
}

// The enqueue form sets the kind, max attempts and timeout, and the
// replace form shows the message's, so that replacing keeps them.
func TestEnqueueFormKeepsKindAndLimits(t *testing.T) {
	q := newQueue(t)
	ctx := context.Background()
	require.NoError(t, q.Enqueue(ctx, durable.Message{ID: "p1", Kind: "email", MaxAttempts: 3, Timeout: 1500 * time.Millisecond, Due: time.Now().Add(time.Hour)}))
	_, srv := newDashboard(t, q)
	_, body := get(t, srv, "/queue/new?id=p1")
	assert.Contains(t, body, `<input name="kind" value="email"`)
	assert.Contains(t, body, `<input name="max_attempts" value="3"`)
	assert.Contains(t, body, `<input name="timeout" value="1.5s"`)
	assert.Contains(t, body, "The kind, max attempts and timeout shown are the message's.")
	tok := token(t, body)
	same := map[string]string{"Sec-Fetch-Site": "same-origin"}

	resp, _ := post(t, srv, "/queue/enqueue", url.Values{"token": {tok}, "id": {"p1"}, "payload": {"new"},
		"kind": {"email"}, "max_attempts": {"3"}, "timeout": {"1.5s"}}, same)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	info, err := q.Get(ctx, "p1")
	require.NoError(t, err)
	assert.Equal(t, "email", info.Kind)
	assert.Equal(t, 3, info.MaxAttempts)
	assert.Equal(t, 1500*time.Millisecond, info.Timeout)
	assert.Equal(t, "new", string(info.Payload))

	resp, _ = post(t, srv, "/queue/enqueue", url.Values{"token": {tok}, "id": {"p2"}, "max_attempts": {""}, "timeout": {"0"}}, same)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	info, err = q.Get(ctx, "p2")
	require.NoError(t, err)
	assert.Equal(t, "", info.Kind)
	assert.Zero(t, info.MaxAttempts)
	assert.Zero(t, info.Timeout)

	_, body = get(t, srv, "/queue/new?id=p2")
	assert.Contains(t, body, `<input name="kind" value=""`)
	assert.Contains(t, body, `<input name="max_attempts" value=""`)
	assert.Contains(t, body, `<input name="timeout" value=""`)

	for _, c := range []struct{ field, value, want string }{
		{"max_attempts", "many", "is not a whole number"},
		{"max_attempts", "-1", "is not a whole number"},
		{"timeout", "soon", "is not a duration"},
		{"timeout", "-5s", "is not a duration"},
		{"kind", strings.Repeat("k", store.MaxKindLen+1), "MaxKindLen"},
	} {
		resp, body := post(t, srv, "/queue/enqueue", url.Values{"token": {tok}, "id": {"bad"}, c.field: {c.value}}, same)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, c.field)
		assert.Contains(t, body, c.want, c.field)
	}
	_, err = q.Get(ctx, "bad")
	require.ErrorIs(t, err, durable.ErrNotFound)
}
