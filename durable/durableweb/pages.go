package durableweb

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

//go:embed assets
var assets embed.FS

// pages are the dashboard's templates, one per page, each with the layout.
var pages = func() map[string]*template.Template {
	funcs := template.FuncMap{
		"when":     when,
		"ago":      ago,
		"preview":  preview,
		"short":    short,
		"duration": showDuration,
		"title":    stateTitle,
		"visible":  visible,
		"maxScan":  func() int { return maxScan },
	}
	layout := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(assets, "assets/layout.html"))
	m := make(map[string]*template.Template)
	for _, name := range []string{"overview", "list", "message", "new", "error"} {
		t := template.Must(layout.Clone())
		m[name] = template.Must(t.ParseFS(assets, "assets/"+name+".html"))
	}
	return m
}()

// view is what every page shows: the header's counts, the page's data.
type view struct {
	Title    string
	Section  string // the nav entry to mark: "", "pending", "in-flight", "dead", "new"
	ReadOnly bool
	Token    string
	Stats    durable.Stats
	StatsErr string
	Now      time.Time
	Refresh  int // seconds between the script's refreshes
	Flash    string
	Data     any
}

// newView returns a page's view, with the queue's counts read now.
func (d *Dashboard) newView(ctx context.Context, title, section string) view {
	v := view{
		Title: title, Section: section, ReadOnly: d.cfg.readOnly, Token: d.token,
		Now: time.Now(), Refresh: max(2, int(min(d.cfg.every, 10*time.Second)/time.Second)),
	}
	if d.cfg.readOnly {
		v.Token = ""
	}
	st, err := d.q.Stats(ctx)
	if err != nil {
		v.StatsErr = describe(err)
	}
	v.Stats = st
	return v
}

// render writes the page name with v.
func (d *Dashboard) render(w http.ResponseWriter, status int, name string, v view) {
	var buf bytes.Buffer
	if err := pages[name].ExecuteTemplate(&buf, "layout.html", v); err != nil {
		log.Printf("durableweb: rendering %s: %v", name, err)
		http.Error(w, "durableweb: the page could not be rendered", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// fail answers with an error page saying msg.
func (d *Dashboard) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	v := d.newView(r.Context(), http.StatusText(status), "")
	v.Data = msg
	d.render(w, status, "error", v)
}

// describe is an error's text for a page.
func describe(err error) string {
	if errors.Is(err, durable.ErrClosed) {
		return "the queue is closed"
	}
	return err.Error()
}

// overviewData is the overview's: the queue's counts are in the view.
type overviewData struct {
	Observed bool
	Rates    rates
	Lateness Lateness
	Totals   Counts
	// Schedules are the queue's series (Queue.Schedule), by name; none
	// for a store that keeps no series.
	Schedules    []durable.ScheduleInfo
	SchedulesErr string
	// Kinds are the pending and the dead messages counted by kind (see
	// countKinds); none if WithKindCounts turned them off.
	Kinds []kindCounts
}

// HasKinds reports whether a message counted has a kind.
func (od overviewData) HasKinds() bool {
	return slices.ContainsFunc(od.Kinds, kindCounts.HasKinds)
}

func (d *Dashboard) overview(w http.ResponseWriter, r *http.Request) {
	v := d.newView(r.Context(), "Overview", "")
	v.Flash = flash(r.URL.Query())
	od := overviewData{Observed: d.cfg.observer != nil}
	if od.Observed {
		od.Totals = d.cfg.observer.Counts()
		od.Lateness = d.cfg.observer.Lateness()
		od.Rates = perMinute(d.ring.samples(), time.Minute)
	}
	series, err := d.q.Schedules(r.Context())
	switch {
	case errors.Is(err, store.ErrSeriesUnsupported):
	case err != nil:
		od.SchedulesErr = describe(err)
	default:
		od.Schedules = series
	}
	if d.cfg.kindCount > 0 {
		od.Kinds = []kindCounts{
			d.countKinds(r.Context(), durable.Pending, v.Stats.Pending, d.cfg.kindCount, d.cfg.kindBytes),
			d.countKinds(r.Context(), durable.Dead, v.Stats.Dead, d.cfg.kindCount, d.cfg.kindBytes),
		}
	}
	v.Data = od
	d.render(w, http.StatusOK, "overview", v)
}

// listData is a list page's.
type listData struct {
	State   string
	Filter  filter
	Cursor  string
	Next    string
	Limit   int
	Items   []durable.Info
	Scanned int  // messages read to fill the page with a filter
	Partial bool // the scan stopped before the page was full
	Err     string
}

// maxScan bounds how many messages a list page reads to find those its
// filter keeps.
const maxScan = 5000

func (d *Dashboard) list(w http.ResponseWriter, r *http.Request, s durable.State) {
	q := r.URL.Query()
	ld := listData{State: s.String(), Cursor: q.Get("cursor"), Limit: d.cfg.pageSize}
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n > 0 {
		ld.Limit = min(n, 500)
	}
	v := d.newView(r.Context(), stateTitle(s.String()), s.String())
	v.Flash = flash(q)
	status := http.StatusOK
	var err error
	ld.Filter, err = filterOf(q)
	if err == nil {
		ld.Items, ld.Next, ld.Scanned, err = d.page(r.Context(), s, ld.Filter, ld.Cursor, ld.Limit)
	}
	if err != nil {
		ld.Err = describe(err)
		status = http.StatusBadRequest
		if !errors.Is(err, durable.ErrInvalidCursor) && !errors.Is(err, errKindAndNoKind) {
			status = http.StatusServiceUnavailable
		}
	}
	ld.Partial = ld.Next != "" && len(ld.Items) < ld.Limit
	v.Data = ld
	d.render(w, status, "list", v)
}

// page returns up to limit messages in state s that f keeps, after
// cursor, the cursor of the next page, and how many messages it read.
// With a filter it reads pages of the remaining limit, so that the
// cursor of the last page it read is the right one to go on from, and
// stops after maxScan messages.
func (d *Dashboard) page(ctx context.Context, s durable.State, f filter, cursor string, limit int) ([]durable.Info, string, int, error) {
	if !f.Any() {
		infos, next, err := d.q.List(ctx, s, cursor, limit)
		return infos, next, len(infos), err
	}
	var out []durable.Info
	scanned := 0
	for len(out) < limit && scanned < maxScan {
		infos, next, err := d.q.List(ctx, s, cursor, limit-len(out))
		if err != nil {
			return out, cursor, scanned, err
		}
		scanned += len(infos)
		for _, in := range infos {
			if f.match(in) {
				out = append(out, in)
			}
		}
		cursor = next
		if next == "" {
			break
		}
	}
	return out, cursor, scanned, nil
}

// messageData is a message page's.
type messageData struct {
	ID      string
	Found   bool
	Info    durable.Info
	Payload payloadView
	Err     string
}

func (d *Dashboard) message(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	id := q.Get("id")
	v := d.newView(r.Context(), "Message", "")
	v.Flash = flash(q)
	md := messageData{ID: id}
	status := http.StatusOK
	info, err := d.q.Get(r.Context(), id)
	switch {
	case errors.Is(err, durable.ErrNotFound):
		md.Err = "There is no message with this ID (it may have been acked or cancelled)."
		status = http.StatusNotFound
	case err != nil:
		md.Err = describe(err)
		status = http.StatusServiceUnavailable
	default:
		md.Found, md.Info, md.Payload = true, info, showPayload(info.Payload)
		v.Section = info.State.String()
	}
	v.Data = md
	d.render(w, status, "message", v)
}

// newData is the enqueue form's.
type newData struct {
	ID, Payload, Due string
	// Kind, MaxAttempts and Timeout are the message's: "" for none (the
	// queue's MaxAttempts, no timeout).
	Kind, MaxAttempts, Timeout string
	Replace                    bool
	Binary                     bool // the message replaced has a payload the form cannot show
}

func (d *Dashboard) enqueueForm(w http.ResponseWriter, r *http.Request) {
	if d.cfg.readOnly {
		d.fail(w, r, http.StatusForbidden, "This dashboard is read-only: it serves no actions.")
		return
	}
	v := d.newView(r.Context(), "Enqueue", "new")
	nd := newData{ID: r.URL.Query().Get("id")}
	if nd.ID != "" {
		if info, err := d.q.Get(r.Context(), nd.ID); err == nil {
			nd.Replace = true
			if !info.Due.IsZero() {
				nd.Due = info.Due.UTC().Format(time.RFC3339Nano)
			}
			nd.Kind = info.Kind
			if info.MaxAttempts > 0 {
				nd.MaxAttempts = strconv.Itoa(info.MaxAttempts)
			}
			if info.Timeout > 0 {
				nd.Timeout = info.Timeout.String()
			}
			if pv := showPayload(info.Payload); pv.Kind == "hex" {
				nd.Binary = true
			} else {
				nd.Payload = string(info.Payload)
			}
		}
	}
	v.Data = nd
	d.render(w, http.StatusOK, "new", v)
}

// stateTitle is the heading of a state's list.
func stateTitle(s string) string {
	switch s {
	case "pending":
		return "Pending"
	case "in-flight":
		return "In flight"
	case "dead":
		return "Dead"
	}
	return s
}

// flash is the line a page shows after an action redirected to it.
func flash(q url.Values) string {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	id := get("id")
	switch get("done") {
	case "requeued":
		return fmt.Sprintf("Requeued %q: it is pending, due now.", id)
	case "requeued-all":
		f, _ := filterOf(q)
		if what := f.describe(goQuote); what != "" {
			return fmt.Sprintf("Requeued %s dead messages %s: they are pending, due now.", get("n"), what)
		}
		return fmt.Sprintf("Requeued %s dead messages: they are pending, due now.", get("n"))
	case "cancelled":
		return fmt.Sprintf("Cancelled %q.", id)
	case "enqueued":
		return fmt.Sprintf("Enqueued %q.", id)
	case "paused":
		return "Paused: no process receives from the queue until it is resumed."
	case "resumed":
		return "Resumed: receivers take messages again."
	}
	return ""
}

// static serves the embedded style sheet and script.
func (d *Dashboard) static(w http.ResponseWriter, r *http.Request, name string) {
	b, err := fs.ReadFile(assets, "assets/static/"+name)
	if err != nil || strings.Contains(name, "/") {
		d.fail(w, r, http.StatusNotFound, "There is no such file.")
		return
	}
	switch {
	case strings.HasSuffix(name, ".js"):
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	case strings.HasSuffix(name, ".css"):
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	}
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(b)
}
