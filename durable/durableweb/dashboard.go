package durableweb

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/seed64e23a5c/timingwheel/durable"
)

// Dashboard is the dashboard of one queue: an http.Handler, and the
// sampler that records the queue's Stats for the chart. Make one with New
// (or Handler); it is safe for concurrent use.
type Dashboard struct {
	q     *durable.Queue
	cfg   config
	ring  *ring
	token string // the token each form carries (see checkAction)
	cop   *http.CrossOriginProtection

	cancel    context.CancelFunc
	done      chan struct{} // closed when the sampler returns
	closeOnce sync.Once
}

var _ http.Handler = (*Dashboard)(nil)

// Handler serves the dashboard of q. It works under any prefix (http.StripPrefix).
//
// Its sampler records q's Stats every few seconds until q is closed (it
// returns at its first sample after Close, within WithSampleInterval), or
// until the context of WithContext ends; use New for a Dashboard that can
// also be closed on its own.
func Handler(q *durable.Queue, opts ...Option) http.Handler { return New(q, opts...) }

// New returns the dashboard of q, configured by opts, and starts its
// sampler, which records q's Stats every few seconds (WithSampleInterval)
// for the last hour. The sampler ends when q is closed, when the context
// of WithContext ends, or on Close.
func New(q *durable.Queue, opts ...Option) *Dashboard {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail
	d := &Dashboard{
		q:     q,
		cfg:   cfg,
		ring:  newRing(min(int(cfg.history/cfg.every)+1, maxSamples)),
		token: hex.EncodeToString(b[:]),
		cop:   http.NewCrossOriginProtection(),
		done:  make(chan struct{}),
	}
	ctx, cancel := context.WithCancel(cfg.ctx)
	d.cancel = cancel
	go d.run(ctx)
	return d
}

// maxSamples bounds the samples a dashboard keeps: with a sample interval
// below half a second, its chart covers less than the last hour.
const maxSamples = 7201

// Close stops the sampler and waits for it to return. The dashboard
// still serves its pages (without new samples). Close is idempotent, and
// does not close the queue.
func (d *Dashboard) Close() error {
	d.closeOnce.Do(d.cancel)
	<-d.done
	return nil
}

// securityHeaders are sent with every response.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
	"X-Content-Type-Options":       "nosniff",
	"Referrer-Policy":              "same-origin",
	"X-Frame-Options":              "DENY",
	"Cross-Origin-Opener-Policy":   "same-origin",
	"Cross-Origin-Resource-Policy": "same-origin",
}

// The action paths: POST only, and none at all when ReadOnly. Pause and
// resume (durable.Queue.Pause, Resume) go with a badge in the page's
// header while the queue is paused.
var actions = map[string]func(*Dashboard, http.ResponseWriter, *http.Request){
	"requeue":     (*Dashboard).requeue,
	"requeue-all": (*Dashboard).requeueAll,
	"cancel":      (*Dashboard).cancelMessage,
	"enqueue":     (*Dashboard).enqueue,
	"pause":       (*Dashboard).pause,
	"resume":      (*Dashboard).resume,
}

// ServeHTTP serves the dashboard's pages, its assets and its actions.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	for k, v := range securityHeaders {
		h.Set(k, v)
	}
	path := strings.TrimPrefix(r.URL.Path, "/")
	if act, ok := actions[path]; ok {
		if !d.checkAction(w, r) {
			return
		}
		act(d, w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		d.fail(w, r, http.StatusMethodNotAllowed, "This page only shows; it changes nothing.")
		return
	}
	switch {
	case path == "":
		d.overview(w, r)
	case path == "message":
		d.message(w, r)
	case path == "new":
		d.enqueueForm(w, r)
	case path == "stats.json":
		d.statsJSON(w, r)
	case path == "chart.svg":
		d.countsChart(w, r)
	case path == "throughput.svg":
		d.throughputChart(w, r)
	case strings.HasPrefix(path, "static/"):
		d.static(w, r, strings.TrimPrefix(path, "static/"))
	default:
		if s, ok := stateOf(path); ok {
			d.list(w, r, s)
			return
		}
		d.fail(w, r, http.StatusNotFound, "There is no such page.")
	}
}

// checkAction refuses an action, answering, unless the dashboard serves
// actions, the request is a POST, from the dashboard's own origin, with
// the token of its forms.
func (d *Dashboard) checkAction(w http.ResponseWriter, r *http.Request) bool {
	switch {
	case d.cfg.readOnly:
		d.fail(w, r, http.StatusForbidden, "This dashboard is read-only: it serves no actions.")
		return false
	case r.Method != http.MethodPost:
		w.Header().Set("Allow", "POST")
		d.fail(w, r, http.StatusMethodNotAllowed, "Actions are POSTs from the dashboard's forms.")
		return false
	}
	if !d.sameOrigin(r) {
		d.fail(w, r, http.StatusForbidden, "Refused a request from another site.")
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4*durable.MaxPayloadLen)
	if err := r.ParseForm(); err != nil {
		d.fail(w, r, http.StatusBadRequest, "The form could not be read.")
		return false
	}
	got := r.PostForm.Get("token")
	if subtle.ConstantTimeCompare([]byte(got), []byte(d.token)) != 1 {
		d.fail(w, r, http.StatusForbidden, "The form's token is missing or wrong: reload the page and try again.")
		return false
	}
	return true
}

// sameOrigin reports whether r comes from a page of the dashboard's own
// origin, or of a trusted one (WithTrustedOrigins). A browser says where
// a request comes from in Sec-Fetch-Site and Origin: the request is
// refused if either names another site (Origin: its host must be the
// request's Host), and net/http's CrossOriginProtection must accept it
// too. A request with neither header is not from a browser's page (or
// from a very old browser): the forms' token decides.
func (d *Dashboard) sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin != "" && d.cfg.trusted[origin] {
		return true
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return false
	}
	if origin != "" {
		u, err := url.Parse(origin)
		if err != nil || origin == "null" || u.Host == "" || !strings.EqualFold(u.Host, r.Host) {
			return false
		}
	}
	return d.cop.Check(r) == nil
}

// stateOf returns the state a list's path names.
func stateOf(path string) (durable.State, bool) {
	for _, s := range []durable.State{durable.Pending, durable.InFlight, durable.Dead} {
		if path == s.String() {
			return s, true
		}
	}
	return 0, false
}
