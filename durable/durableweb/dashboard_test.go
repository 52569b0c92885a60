package durableweb

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel"
	"github.com/seed64e23a5c/timingwheel/durable"
)

// Texts a producer could write that would run script if not escaped.
const (
	evilImg    = `<img src=x onerror="document.title='pwned';window.__pwned=1">`
	evilScript = `</script><script>document.title='pwned';window.__pwned=2</script>`
)

func TestSecurityHeadersOnEveryResponse(t *testing.T) {
	q := newQueue(t)
	_, srv := newDashboard(t, q)
	for _, path := range []string{"/queue/", "/queue/pending", "/queue/message?id=x", "/queue/stats.json",
		"/queue/chart.svg", "/queue/static/app.js", "/queue/nothing", "/queue/cancel"} {
		resp, _ := get(t, srv, path)
		csp := resp.Header.Get("Content-Security-Policy")
		assert.Contains(t, csp, "script-src 'self'", path)
		assert.Contains(t, csp, "frame-ancestors 'none'", path)
		assert.NotContains(t, csp, "unsafe-inline", path)
		assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), path)
		assert.Equal(t, "same-origin", resp.Header.Get("Referrer-Policy"), path)
	}
}

func TestPagesEscapeWhatProducersWrote(t *testing.T) {
	q := newQueue(t, durable.WithMaxAttempts(1))
	ctx := context.Background()
	kill(t, q, "dead-"+evilImg, evilScript)
	require.NoError(t, q.Enqueue(ctx, durable.Message{ID: evilScript, Payload: []byte(evilImg), Due: time.Now().Add(time.Hour)}))
	require.NoError(t, q.Enqueue(ctx, durable.Message{ID: "json", Payload: []byte(`{"html":"` + strings.ReplaceAll(evilScript, "/", `\/`) + `"}`), Due: time.Now().Add(time.Hour)}))
	_, srv := newDashboard(t, q)
	for _, path := range []string{"/queue/pending", "/queue/dead", "/queue/pending?prefix=" + url.QueryEscape(evilScript),
		"/queue/message?id=" + url.QueryEscape(evilScript), "/queue/message?id=" + url.QueryEscape("dead-"+evilImg),
		"/queue/message?id=json", "/queue/new?id=" + url.QueryEscape(evilScript), "/queue/dead?done=cancelled&id=" + url.QueryEscape(evilImg)} {
		resp, body := get(t, srv, path)
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		assert.NotContains(t, body, "<img src=x", path)
		assert.NotContains(t, body, "<script>document", path)
		assert.Contains(t, body, "&lt;", path, "the texts are there, escaped")
		assert.Equal(t, 1, strings.Count(body, "<script"), path, "only the page's own script tag")
	}
}

// token returns the token of the first action form in body.
func token(t *testing.T, body string) string {
	t.Helper()
	m := regexp.MustCompile(`name="token" value="([0-9a-f]+)"`).FindStringSubmatch(body)
	require.NotNil(t, m, "a form with a token")
	return m[1]
}

func TestActionsRefuseCrossSiteRequests(t *testing.T) {
	q := newQueue(t, durable.WithMaxAttempts(1))
	ctx := context.Background()
	kill(t, q, "d1", "boom")
	_, srv := newDashboard(t, q)
	_, body := get(t, srv, "/queue/dead")
	tok := token(t, body)

	form := func(tok string) url.Values { return url.Values{"id": {"d1"}, "token": {tok}} }
	cases := []struct {
		name    string
		form    url.Values
		headers map[string]string
		status  int
	}{
		{"no token", url.Values{"id": {"d1"}}, nil, http.StatusForbidden},
		{"wrong token", form(strings.Repeat("0", len(tok))), nil, http.StatusForbidden},
		{"cross-site fetch", form(tok), map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"same-site fetch", form(tok), map[string]string{"Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
		{"foreign origin", form(tok), map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"null origin", form(tok), map[string]string{"Origin": "null"}, http.StatusForbidden},
		{"foreign origin, same-origin fetch", form(tok), map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "same-origin"}, http.StatusForbidden},
		{"trusted origin without token", url.Values{"id": {"d1"}}, map[string]string{"Origin": "https://ops.example", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
	}
	for _, c := range cases {
		for _, action := range []string{"requeue", "cancel", "requeue-all", "pause"} {
			resp, _ := post(t, srv, "/queue/"+action, c.form, c.headers)
			assert.Equal(t, c.status, resp.StatusCode, "%s: %s", action, c.name)
		}
		info, err := q.Get(ctx, "d1")
		require.NoError(t, err, c.name)
		require.Equal(t, durable.Dead, info.State, "%s changed nothing", c.name)
		st, err := q.Stats(ctx)
		require.NoError(t, err)
		require.False(t, st.Paused, "%s did not pause", c.name)
	}

	// GET never acts.
	resp, _ := get(t, srv, "/queue/requeue?id=d1&token="+tok)
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Equal(t, "POST", resp.Header.Get("Allow"))
	info, err := q.Get(ctx, "d1")
	require.NoError(t, err)
	require.Equal(t, durable.Dead, info.State)

	// The form as the browser sends it works.
	resp, _ = post(t, srv, "/queue/requeue", form(tok), map[string]string{
		"Sec-Fetch-Site": "same-origin", "Origin": srv.URL})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, "message?done=requeued&id=d1", resp.Header.Get("Location"))
	info, err = q.Get(ctx, "d1")
	require.NoError(t, err)
	assert.Equal(t, durable.Pending, info.State)
}

func TestReadOnlyServesNoAction(t *testing.T) {
	q := newQueue(t, durable.WithMaxAttempts(1))
	ctx := context.Background()
	kill(t, q, "d1", "boom")
	require.NoError(t, q.Enqueue(ctx, durable.Message{ID: "p1", Due: time.Now().Add(time.Hour)}))
	_, srv := newDashboard(t, q, ReadOnly())
	for _, path := range []string{"/queue/", "/queue/dead", "/queue/pending", "/queue/message?id=d1", "/queue/message?id=p1"} {
		resp, body := get(t, srv, path)
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		assert.NotContains(t, body, `method="post"`, path)
		assert.NotContains(t, body, `name="token"`, path)
		assert.NotContains(t, body, `href="new"`, path)
		assert.Contains(t, body, "read-only", path)
	}
	resp, _ := get(t, srv, "/queue/new")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	for _, action := range []string{"requeue", "requeue-all", "cancel", "enqueue", "pause", "resume"} {
		resp, _ := post(t, srv, "/queue/"+action, url.Values{"id": {"d1"}}, map[string]string{"Sec-Fetch-Site": "same-origin"})
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, action)
	}
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, st.Dead)
	assert.Equal(t, 1, st.Pending)
	assert.False(t, st.Paused)
}

func TestActions(t *testing.T) {
	q := newQueue(t, durable.WithMaxAttempts(1))
	ctx := context.Background()
	kill(t, q, "d1", "boom")
	kill(t, q, "d2", "boom")
	kill(t, q, "d3", "boom")
	_, srv := newDashboard(t, q)
	_, body := get(t, srv, "/queue/dead")
	tok := token(t, body)
	same := map[string]string{"Sec-Fetch-Site": "same-origin"}

	resp, _ := post(t, srv, "/queue/cancel", url.Values{"id": {"d1"}, "token": {tok}, "from": {"dead"}}, same)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, "dead?done=cancelled&id=d1", resp.Header.Get("Location"))
	_, err := q.Get(ctx, "d1")
	require.ErrorIs(t, err, durable.ErrNotFound)

	resp, body = post(t, srv, "/queue/cancel", url.Values{"id": {"d1"}, "token": {tok}}, same)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Contains(t, body, "there is no message &#34;d1&#34;")

	resp, _ = post(t, srv, "/queue/requeue-all", url.Values{"token": {tok}}, same)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, "dead?done=requeued-all&n=2", resp.Header.Get("Location"))
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, st.Dead)

	due := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	resp, _ = post(t, srv, "/queue/enqueue", url.Values{"id": {"new one"}, "payload": {"line 1\r\nline 2"},
		"due": {due.Format(time.RFC3339)}, "token": {tok}}, same)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, "message?done=enqueued&id=new+one", resp.Header.Get("Location"))
	info, err := q.Get(ctx, "new one")
	require.NoError(t, err)
	assert.Equal(t, "line 1\nline 2", string(info.Payload))
	assert.True(t, due.Equal(info.Due), "due %v, want %v", info.Due, due)

	resp, body = post(t, srv, "/queue/enqueue", url.Values{"id": {"x"}, "due": {"tomorrow"}, "token": {tok}}, same)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, body, "neither a duration")
	resp, _ = post(t, srv, "/queue/enqueue", url.Values{"id": {""}, "token": {tok}}, same)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

func TestCancelInFlightIsRefused(t *testing.T) {
	q := newQueue(t)
	ctx := context.Background()
	require.NoError(t, q.Enqueue(ctx, durable.Message{ID: "busy"}))
	dl, err := q.Receive(ctx)
	require.NoError(t, err)
	_, srv := newDashboard(t, q)
	_, body := get(t, srv, "/queue/message?id=busy")
	assert.Contains(t, body, "in-flight")
	assert.NotContains(t, body, `action="cancel"`)
	_, body = get(t, srv, "/queue/new")
	tok := token(t, body)
	resp, _ := post(t, srv, "/queue/cancel", url.Values{"id": {"busy"}, "token": {tok}}, nil)
	assert.Equal(t, http.StatusConflict, resp.StatusCode)
	require.NoError(t, dl.Ack(ctx))
}

func TestListPagesWithCursorsAndPrefix(t *testing.T) {
	q := newQueue(t)
	ctx := context.Background()
	base := time.Now().Add(time.Hour)
	var want []string
	for i := range 10 {
		id := fmt.Sprintf("b-%02d", i)
		if i%3 == 0 {
			id = fmt.Sprintf("a-%02d", i)
			want = append(want, id)
		}
		require.NoError(t, q.Enqueue(ctx, durable.Message{ID: id, Due: base.Add(time.Duration(i) * time.Second)}))
	}
	d := New(q)
	defer d.Close()
	for _, limit := range []int{1, 2, 3, 10} {
		var got []string
		cursor := ""
		for range 20 {
			infos, next, _, err := d.page(ctx, durable.Pending, filter{Prefix: "a-"}, cursor, limit)
			require.NoError(t, err)
			assert.LessOrEqual(t, len(infos), limit)
			for _, in := range infos {
				got = append(got, in.ID)
			}
			if next == "" {
				break
			}
			cursor = next
		}
		assert.Equal(t, want, got, "limit %d", limit)
	}

	// Over HTTP: the pager's links go through every message, in order.
	_, srv := newDashboard(t, q)
	var got []string
	path := "/queue/pending?limit=4"
	for range 10 {
		resp, body := get(t, srv, path)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		for _, m := range regexp.MustCompile(`href="message\?id=([^"]+)"`).FindAllStringSubmatch(body, -1) {
			got = append(got, m[1])
		}
		next := regexp.MustCompile(`rel="next" href="([^"]+)"`).FindStringSubmatch(body)
		if next == nil {
			break
		}
		path = "/queue/" + strings.ReplaceAll(next[1], "&amp;", "&")
	}
	require.Len(t, got, 10)
	for i := 1; i < len(got); i++ {
		assert.Less(t, got[i-1][2:], got[i][2:], "in due order")
	}

	resp, body := get(t, srv, "/queue/pending?cursor=nonsense")
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, body, "invalid cursor")
}

func TestShowPayload(t *testing.T) {
	v := showPayload([]byte(`{"a":[1,2],"b":"<x>"}`))
	assert.Equal(t, "json", v.Kind)
	assert.Equal(t, "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": \"<x>\"\n}", v.Text)
	v = showPayload([]byte("héllo\nworld"))
	assert.Equal(t, "text", v.Kind)
	assert.Equal(t, "héllo\nworld", v.Text)
	v = showPayload([]byte{0, 1, 0xff, 'a'})
	assert.Equal(t, "hex", v.Kind)
	assert.Contains(t, v.Text, "00 01 ff 61")
	assert.Equal(t, "empty", showPayload(nil).Kind)
	big := showPayload([]byte(strings.Repeat("é", maxShown)))
	assert.Equal(t, "text", big.Kind)
	assert.Equal(t, 2*maxShown, big.Size)
	assert.LessOrEqual(t, big.Shown, maxShown)
	assert.Equal(t, big.Shown, len(big.Text))
	assert.Equal(t, "(3 bytes, binary)", preview([]byte{0, 1, 2}))
	assert.Equal(t, "a b", preview([]byte("a\n\n b")))
}

func TestReplaceFormKeepsTheDueTime(t *testing.T) {
	q := newQueue(t)
	due := time.Now().Add(time.Hour).UTC()
	require.NoError(t, q.Enqueue(context.Background(), durable.Message{ID: "p1", Payload: []byte("hello"), Due: due}))
	_, srv := newDashboard(t, q)
	resp, body := get(t, srv, "/queue/new?id=p1")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, body, "Replace a message")
	assert.Contains(t, body, `value="`+due.Format(time.RFC3339Nano)+`"`)
	assert.Contains(t, body, ">hello</textarea>")
	got, err := parseDue(due.Format(time.RFC3339Nano), time.Now())
	require.NoError(t, err)
	assert.True(t, due.Equal(got))
	_, body = get(t, srv, "/queue/pending")
	assert.Contains(t, body, "<h1>Pending <span")
}

func TestTrustedOrigins(t *testing.T) {
	q := newQueue(t, durable.WithMaxAttempts(1))
	ctx := context.Background()
	kill(t, q, "d1", "boom")
	kill(t, q, "d2", "boom")
	_, srv := newDashboard(t, q, WithTrustedOrigins("https://ops.example/"))
	_, body := get(t, srv, "/queue/dead")
	tok := token(t, body)
	resp, _ := post(t, srv, "/queue/requeue", url.Values{"id": {"d1"}, "token": {tok}},
		map[string]string{"Origin": "https://ops.example", "Sec-Fetch-Site": "cross-site"})
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode)
	resp, _ = post(t, srv, "/queue/requeue", url.Values{"id": {"d2"}, "token": {tok}},
		map[string]string{"Origin": "https://ops.example.evil", "Sec-Fetch-Site": "cross-site"})
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, st.Dead)
	assert.Equal(t, 1, st.Pending)
}

func TestPauseAndResumeActions(t *testing.T) {
	q := newQueue(t)
	ctx := context.Background()
	_, srv := newDashboard(t, q)
	_, body := get(t, srv, "/queue/")
	tok := token(t, body)
	assert.Contains(t, body, `action="pause"`)
	assert.Regexp(t, `<span class="badge paused" data-paused hidden>paused</span>`, body)
	same := map[string]string{"Sec-Fetch-Site": "same-origin"}

	resp, _ := post(t, srv, "/queue/pause", url.Values{"token": {tok}}, same)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, "./?done=paused", resp.Header.Get("Location"))
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.True(t, st.Paused)
	_, body = get(t, srv, "/queue/?done=paused")
	assert.Contains(t, body, `<span class="badge paused" data-paused>paused</span>`)
	assert.Contains(t, body, `action="resume"`)
	assert.NotContains(t, body, `action="pause"`)
	assert.Contains(t, body, "Paused: no process receives")
	_, body = get(t, srv, "/queue/stats.json")
	assert.Contains(t, body, `"paused":true`)

	resp, _ = post(t, srv, "/queue/resume", url.Values{"token": {tok}}, same)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, "./?done=resumed", resp.Header.Get("Location"))
	st, err = q.Stats(ctx)
	require.NoError(t, err)
	assert.False(t, st.Paused)
	_, body = get(t, srv, "/queue/stats.json")
	assert.Contains(t, body, `"paused":false`)
}

// The overview lists the queue's series (Queue.Schedule) by name, with
// their last and next times, escaped like everything producers write.
func TestOverviewShowsSchedules(t *testing.T) {
	q := newQueue(t)
	ctx := context.Background()
	_, srv := newDashboard(t, q)
	_, body := get(t, srv, "/queue/")
	assert.NotContains(t, body, "<h2>Schedules</h2>", "no section without series")

	require.NoError(t, q.Schedule(ctx, "hourly-report", timingwheel.Every(time.Hour), []byte("r")))
	require.NoError(t, q.Schedule(ctx, "x"+evilImg, timingwheel.Every(time.Minute), nil))
	series, err := q.Schedules(ctx)
	require.NoError(t, err)
	require.Len(t, series, 2)
	resp, body := get(t, srv, "/queue/")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, body, "<h2>Schedules</h2>")
	assert.Contains(t, body, "hourly-report")
	assert.Contains(t, body, "x&lt;img src=x", "a series' name is escaped")
	assert.NotContains(t, body, "<img src=x")
	for _, s := range series {
		assert.Contains(t, body, s.Next.UTC().Format("2006-01-02 15:04:05"), "%s: its next time", s.Name)
	}
}
