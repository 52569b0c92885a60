package durableweb

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// A browser is a headless Chromium driven by chromedp, which answers the
// page's confirm() dialogs as accept says.
type browser struct {
	ctx    context.Context
	accept atomic.Bool
	mu     sync.Mutex
	asked  []string // the dialogs' questions, in order
}

// findBrowser returns the path of a Chromium, or "".
func findBrowser() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// newBrowser starts a headless Chromium for the test, or skips the test
// if there is none (fails it with REQUIRE_BROWSER=1).
func newBrowser(t *testing.T) *browser {
	t.Helper()
	path := findBrowser()
	if path == "" {
		if os.Getenv("REQUIRE_BROWSER") == "1" {
			t.Fatal("no Chromium found on PATH (chromium, chromium-browser, google-chrome, headless-shell), and REQUIRE_BROWSER=1")
		}
		t.Skip("no Chromium found on PATH (apt-get install chromium); set REQUIRE_BROWSER=1 to fail instead of skipping")
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox, // as root in a container
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
	)
	ctx, cancel := chromedp.NewContext(allocCtx)
	b := &browser{ctx: ctx}
	require.NoError(t, chromedp.Do(ctx), "starting %s", path)
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.asked = append(b.asked, ev.Message)
			b.mu.Unlock()
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: b.accept.Load()})
		}
	}()
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
		<-done
	})
	return b
}

// do runs the steps, within a time limit.
func (b *browser) do(t *testing.T, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx, steps...))
}

// eval returns the value of the script expr in the page.
func eval[T any](t *testing.T, b *browser, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(t, err, expr)
	return v
}

// nothingRan checks that no script a producer wrote ran in the page.
func (b *browser) nothingRan(t *testing.T) {
	t.Helper()
	assert.Equal(t, "undefined", eval[string](t, b, `typeof window.__pwned`), "injected script ran")
	assert.NotEqual(t, "pwned", eval[string](t, b, `document.title`), "injected script ran")
	assert.True(t, strings.HasSuffix(eval[string](t, b, `document.title`), "queue dashboard"))
}

// navigates runs the steps, which load another page, and waits until the
// new page is loaded.
func (b *browser) navigates(t *testing.T, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	b.do(t, chromedp.Evaluate[chromedp.Void](`window.__before = true`))
	b.do(t, steps...)
	require.Eventually(t, func() bool {
		return eval[bool](t, b, `window.__before === undefined && document.readyState === 'complete'`)
	}, 10*time.Second, 20*time.Millisecond, "a new page loads")
}

// questions returns the dialogs' questions so far.
func (b *browser) questions() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.asked...)
}

func TestDashboardInABrowser(t *testing.T) {
	b := newBrowser(t)
	obs := NewObserver()
	q := newQueue(t, durable.WithMaxAttempts(1), durable.WithObserver(obs))
	ctx := context.Background()
	kill(t, q, "dead-1", "smtp: connection refused")
	kill(t, q, "dead-2", "timeout")
	kill(t, q, "dead-"+evilImg, evilScript)
	base := time.Now().Add(time.Hour)
	var pending []string
	for i := range 7 {
		id := fmt.Sprintf("job-%02d", i)
		pending = append(pending, id)
		require.NoError(t, q.Enqueue(ctx, durable.Message{ID: id, Payload: []byte(`{"n":` + fmt.Sprint(i) + `}`), Due: base.Add(time.Duration(i) * time.Minute)}))
	}
	require.NoError(t, q.Enqueue(ctx, durable.Message{ID: evilScript, Payload: []byte(evilImg), Due: base.Add(time.Hour)}))
	pending = append(pending, evilScript)
	d, srv := newDashboard(t, q, WithObserver(obs), WithSampleInterval(time.Second))
	root := srv.URL + "/queue/"

	// The overview's counts.
	b.do(t, chromedp.Navigate(root), chromedp.WaitVisible(chromedp.CSS("h1")))
	assert.Equal(t, "8", eval[string](t, b, `document.querySelector('.cards [data-stat="pending"]').textContent`))
	assert.Equal(t, "3", eval[string](t, b, `document.querySelector('.cards [data-stat="dead"]').textContent`))
	assert.Equal(t, "3", eval[string](t, b, `document.querySelector('nav [data-stat="dead"]').textContent`))
	assert.True(t, eval[bool](t, b, `document.querySelector('img.chart').complete && document.querySelector('img.chart').naturalWidth > 0`), "the chart loads")
	b.nothingRan(t)

	// The page refreshes its counts by itself.
	require.NoError(t, q.Enqueue(ctx, durable.Message{ID: "late-comer", Due: base}))
	require.Eventually(t, func() bool {
		return eval[string](t, b, `document.querySelector('.cards [data-stat="pending"]').textContent`) == "9"
	}, 10*time.Second, 100*time.Millisecond, "the script updates the counts")
	_, err := q.Cancel(ctx, "late-comer")
	require.NoError(t, err)

	// Page through the pending messages, three at a time, by the links.
	b.do(t, chromedp.Navigate(root+"pending?limit=3"), chromedp.WaitVisible(chromedp.CSS("table.list")))
	var seen []string
	for range 10 {
		ids := eval[[]string](t, b, `Array.from(document.querySelectorAll('td a.id')).map(a => new URL(a.href).searchParams.get('id'))`)
		assert.LessOrEqual(t, len(ids), 3)
		seen = append(seen, ids...)
		b.nothingRan(t)
		if !eval[bool](t, b, `document.querySelector('a[rel=next]') !== null`) {
			break
		}
		b.navigates(t, chromedp.Click(chromedp.CSS("a[rel=next]")))
		assert.True(t, strings.HasPrefix(eval[string](t, b, `location.pathname`), "/queue/pending"))
	}
	assert.Equal(t, pending, seen)

	// Filter by prefix.
	b.do(t, chromedp.Navigate(root+"dead"), chromedp.WaitVisible(chromedp.CSS("form.filter")))
	b.navigates(t, chromedp.SendKeys(chromedp.CSS(`input[name="prefix"]`), "dead-1"),
		chromedp.Submit(chromedp.CSS(`input[name="prefix"]`)))
	ids := eval[[]string](t, b, `Array.from(document.querySelectorAll('td a.id')).map(a => a.textContent)`)
	assert.Equal(t, []string{"dead-1"}, ids)

	// Requeue a dead message by clicking: refused in the dialog first.
	requeue := `form[action="requeue"]:has(input[name="id"][value="dead-1"]) button`
	b.accept.Store(false)
	b.do(t, chromedp.Navigate(root+"dead"), chromedp.WaitVisible(chromedp.CSS(requeue)), chromedp.Click(chromedp.CSS(requeue)))
	time.Sleep(300 * time.Millisecond)
	info, err := q.Get(ctx, "dead-1")
	require.NoError(t, err)
	require.Equal(t, durable.Dead, info.State, "the dialog was dismissed: nothing happened")
	b.accept.Store(true)
	b.navigates(t, chromedp.Click(chromedp.CSS(requeue)))
	assert.Equal(t, []string{"Requeue dead-1?", "Requeue dead-1?"}, b.questions())
	info, err = q.Get(ctx, "dead-1")
	require.NoError(t, err)
	assert.Equal(t, durable.Pending, info.State)
	assert.Equal(t, "/queue/message", eval[string](t, b, `location.pathname`))
	assert.Equal(t, `Requeued "dead-1": it is pending, due now.`, eval[string](t, b, `document.querySelector('p.flash').textContent`))
	assert.Equal(t, "pending", eval[string](t, b, `document.querySelector('[data-field="state"]').textContent`))

	// Cancel a pending message from its page.
	b.do(t, chromedp.Navigate(root+"message?id=job-00"), chromedp.WaitVisible(chromedp.CSS(`pre.payload`)))
	assert.Equal(t, "{\n  \"n\": 0\n}", eval[string](t, b, `document.querySelector('pre.payload.json').textContent`))
	b.navigates(t, chromedp.Click(chromedp.CSS(`form[action="cancel"] button`)))
	assert.Equal(t, "Cancelled \"job-00\".", eval[string](t, b, `document.querySelector('p.flash').textContent`))
	_, err = q.Get(ctx, "job-00")
	require.ErrorIs(t, err, durable.ErrNotFound)
	assert.Equal(t, "/queue/pending", eval[string](t, b, `location.pathname`))
	assert.Equal(t, "8", eval[string](t, b, `document.querySelector('nav [data-stat="pending"]').textContent`), "8, less job-00, with dead-1")

	// What producers wrote shows as text, and runs nothing.
	b.do(t, chromedp.Navigate(root+"message?id="+url.QueryEscape(evilScript)), chromedp.WaitVisible(chromedp.CSS("pre.payload")))
	assert.Equal(t, evilImg, eval[string](t, b, `document.querySelector('pre.payload').textContent`))
	assert.Equal(t, evilScript, eval[string](t, b, `document.querySelector('h1 code').textContent`))
	b.nothingRan(t)
	b.do(t, chromedp.Navigate(root+"message?id="+url.QueryEscape("dead-"+evilImg)), chromedp.WaitVisible(chromedp.CSS("pre.err")))
	assert.Equal(t, evilScript, eval[string](t, b, `document.querySelector('pre.err').textContent`))
	assert.Zero(t, eval[int](t, b, `document.querySelectorAll('img:not(.chart)').length`))
	b.nothingRan(t)

	// Pause by the header's button: the badge shows, and the overview
	// offers Resume; the script follows a pause and a resume made
	// elsewhere; Resume by the overview's button.
	badgeShown := `!document.querySelector('.status [data-paused]').hidden`
	b.do(t, chromedp.Navigate(root), chromedp.WaitVisible(chromedp.CSS("h1")))
	assert.False(t, eval[bool](t, b, badgeShown), "not paused: no badge")
	b.navigates(t, chromedp.Click(chromedp.CSS(`.status button[data-action="pause"]`)))
	assert.Contains(t, b.questions(), "Pause the queue? No process receives from it until it is resumed.")
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	assert.True(t, st.Paused)
	assert.True(t, eval[bool](t, b, badgeShown), "the paused badge")
	assert.Equal(t, "Paused: no process receives from the queue until it is resumed.", eval[string](t, b, `document.querySelector('p.flash').textContent`))
	require.NoError(t, q.Resume(ctx))
	require.Eventually(t, func() bool { return !eval[bool](t, b, badgeShown) }, 10*time.Second, 100*time.Millisecond,
		"the script hides the badge after a resume")
	require.NoError(t, q.Pause(ctx))
	require.Eventually(t, func() bool { return eval[bool](t, b, badgeShown) }, 10*time.Second, 100*time.Millisecond,
		"the script shows the badge after a pause")
	b.do(t, chromedp.Navigate(root), chromedp.WaitVisible(chromedp.CSS(`main button[data-action="resume"]`)))
	b.navigates(t, chromedp.Click(chromedp.CSS(`main button[data-action="resume"]`)))
	st, err = q.Stats(ctx)
	require.NoError(t, err)
	assert.False(t, st.Paused)
	assert.False(t, eval[bool](t, b, badgeShown), "resumed: no badge")
	assert.Equal(t, "Resumed: receivers take messages again.", eval[string](t, b, `document.querySelector('p.flash').textContent`))
	b.nothingRan(t)

	// On a phone's width, the list fits: no sideways scrolling.
	b.do(t, chromedp.EmulateViewport(390, 844), chromedp.Navigate(root+"dead"), chromedp.WaitVisible(chromedp.CSS("table.list")))
	assert.LessOrEqual(t, eval[int](t, b, `document.documentElement.scrollWidth`), 390)
	b.nothingRan(t)

	if path := os.Getenv("DASHBOARD_SCREENSHOT"); path != "" {
		screenshot(t, b, d, q, root, path)
	}
}

// screenshot writes a PNG of the overview to path, after giving the
// dashboard (its sampler stopped) an hour of made-up samples, and its
// observer the matching totals, so that its charts have lines.
func screenshot(t *testing.T, b *browser, d *Dashboard, q *durable.Queue, root, path string) {
	require.NoError(t, d.Close())
	// Messages of two kinds, for the overview's counts by kind.
	for i := range 7 {
		kind := "order.close"
		if i%3 == 2 {
			kind = "order.remind"
		}
		id := fmt.Sprintf("order-%d", 40+i)
		require.NoError(t, q.Enqueue(context.Background(), durable.Message{ID: id, Kind: kind, Payload: []byte(`{"order":"` + id + `"}`),
			Due: time.Now().Add(time.Duration(20+i) * time.Minute)}))
	}
	st, err := q.Stats(context.Background())
	require.NoError(t, err)
	d.ring.mu.Lock()
	d.ring.next, d.ring.full = 0, false
	d.ring.mu.Unlock()
	now := time.Now()
	var c Counts
	for i := 120; i >= 0; i-- {
		x := float64(120 - i)
		wave := 1 + 0.4*math.Sin(x/9)
		c.Enqueued += int64(40 * wave)
		c.Delivered += int64(37 * wave)
		c.Acked += int64(34 * wave)
		c.Retried += int64(3 * wave)
		c.Died += int64(i%5) / 4
		d.ring.add(sample{At: now.Add(-time.Duration(i) * 30 * time.Second), Counts: c, Stats: durable.Stats{
			Pending: st.Pending + int(30+20*math.Sin(x/13)+x/6), InFlight: int(6 * wave), Dead: st.Dead + int(x/30)}})
	}
	o := d.cfg.observer
	for i := range 1000 {
		o.Observe(durable.Event{Kind: durable.EventDelivered, Lateness: time.Duration(300+i*i%2500) * time.Microsecond})
	}
	o.enqueued.Store(c.Enqueued)
	o.delivered.Store(c.Delivered)
	o.acked.Store(c.Acked)
	o.retried.Store(c.Retried)
	o.died.Store(c.Died)
	var png []byte
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1100, 900), chromedp.Navigate(root), chromedp.WaitVisible(chromedp.CSS("img.chart"))))
	png, err = chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("wrote %s (%d bytes)", path, len(png))
}

// TestKindsInABrowser: the overview's counts by kind and a list's kinds
// lead to the lists of a kind, the filter's form filters by kind or by
// none, and "requeue all" on a list filtered by kind asks about those
// and requeues those.
func TestKindsInABrowser(t *testing.T) {
	b := newBrowser(t)
	b.accept.Store(true)
	q := newQueue(t, durable.WithMaxAttempts(1))
	ctx := context.Background()
	const evilKind = "\u202e" + evilImg
	for _, m := range []durable.Message{
		{ID: "mail-1", Kind: "email"}, {ID: "text-1", Kind: "sms"}, {ID: "mail-2", Kind: "email"},
		{ID: "plain-1"}, {ID: "evil-1", Kind: evilKind},
	} {
		killMessage(t, q, m, "boom")
	}
	require.NoError(t, q.Enqueue(ctx, durable.Message{ID: "later", Kind: "email", Due: time.Now().Add(time.Hour)}))
	_, srv := newDashboard(t, q)
	root := srv.URL + "/queue/"
	listed := `Array.from(document.querySelectorAll('td a.id')).map(a => a.textContent)`

	// The overview's counts, and a kind's link.
	b.do(t, chromedp.Navigate(root), chromedp.WaitVisible(chromedp.CSS(`section[data-kinds="dead"]`)))
	rows := eval[[]string](t, b, `Array.from(document.querySelectorAll('section[data-kinds="dead"] tbody tr')).map(tr => tr.innerText.replace(/\s+/g, ' ').trim())`)
	assert.Equal(t, []string{"email 2", "none 1", "sms 1", `\u202e` + evilImg + " 1"}, rows)
	b.nothingRan(t)
	b.navigates(t, chromedp.Click(chromedp.CSS(`section[data-kinds="dead"] a[href="dead?kind=email"]`)))
	assert.Equal(t, []string{"mail-1", "mail-2"}, eval[[]string](t, b, listed))
	assert.Equal(t, "email", eval[string](t, b, `document.querySelector('input[name="kind"]').value`))

	// A list's kind links to the list of that kind.
	b.do(t, chromedp.Navigate(root+"dead?prefix=text-"), chromedp.WaitVisible(chromedp.CSS("table.list")))
	b.navigates(t, chromedp.Click(chromedp.CSS(`td a.kind`)))
	assert.Equal(t, []string{"text-1"}, eval[[]string](t, b, listed))
	assert.Equal(t, "sms", eval[string](t, b, `document.querySelector('input[name="kind"]').value`))

	// The form: by kind, then without a kind.
	b.do(t, chromedp.Navigate(root+"dead"), chromedp.WaitVisible(chromedp.CSS("form.filter")))
	b.navigates(t, chromedp.SendKeys(chromedp.CSS(`input[name="kind"]`), "sms"), chromedp.Submit(chromedp.CSS(`input[name="kind"]`)))
	assert.Equal(t, []string{"text-1"}, eval[[]string](t, b, listed))
	b.do(t, chromedp.Navigate(root+"dead"), chromedp.WaitVisible(chromedp.CSS("form.filter")))
	b.navigates(t, chromedp.Click(chromedp.CSS(`input[name="nokind"]`)), chromedp.Submit(chromedp.CSS(`input[name="kind"]`)))
	assert.Equal(t, []string{"plain-1"}, eval[[]string](t, b, listed))
	assert.True(t, eval[bool](t, b, `document.querySelector('input[name="nokind"]').checked`))

	// The producer's kind shows as text, its bidi override as an escape.
	b.do(t, chromedp.Navigate(root+"message?id=evil-1"), chromedp.WaitVisible(chromedp.CSS(`[data-field="kind"]`)))
	assert.Equal(t, `\u202e`+evilImg, eval[string](t, b, `document.querySelector('[data-field="kind"]').textContent`))
	b.navigates(t, chromedp.Click(chromedp.CSS(`[data-field="kind"] a`)))
	assert.Equal(t, []string{"evil-1"}, eval[[]string](t, b, listed), "its link lists its kind")
	b.nothingRan(t)

	// Requeue all of a kind.
	b.do(t, chromedp.Navigate(root+"dead?kind=email"), chromedp.WaitVisible(chromedp.CSS(`form[action="requeue-all"] button`)))
	assert.Equal(t, "Requeue all dead of kind “email”", eval[string](t, b, `document.querySelector('form[action="requeue-all"] button').textContent`))
	b.navigates(t, chromedp.Click(chromedp.CSS(`form[action="requeue-all"] button`)))
	assert.Contains(t, b.questions(), "Requeue every dead message of kind “email”?")
	assert.Equal(t, `Requeued 2 dead messages of kind "email": they are pending, due now.`, eval[string](t, b, `document.querySelector('p.flash').textContent`))
	assert.Equal(t, "email", eval[string](t, b, `document.querySelector('input[name="kind"]').value`), "back on the same filter")
	for id, want := range map[string]durable.State{"mail-1": durable.Pending, "mail-2": durable.Pending, "text-1": durable.Dead, "plain-1": durable.Dead, "evil-1": durable.Dead} {
		info, err := q.Get(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, want, info.State, id)
	}
	b.nothingRan(t)
}
