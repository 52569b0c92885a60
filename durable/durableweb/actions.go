package durableweb

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// The actions: each is a POST checked by checkAction, answered by a 303
// redirect to a page that says what was done (relative, so that it works
// under any prefix), or by an error page.

// redirect sends the browser to the page path with query q.
func redirect(w http.ResponseWriter, path string, q url.Values) {
	w.Header().Set("Location", path+"?"+q.Encode())
	w.WriteHeader(http.StatusSeeOther)
}

// actionError answers an action that failed with err.
func (d *Dashboard) actionError(w http.ResponseWriter, r *http.Request, what string, err error) {
	status := http.StatusServiceUnavailable
	switch {
	case errors.Is(err, durable.ErrNotFound):
		status = http.StatusNotFound
	case errors.Is(err, durable.ErrInFlight):
		status = http.StatusConflict
	case errors.Is(err, durable.ErrInvalidMessage):
		status = http.StatusBadRequest
	case errors.Is(err, store.ErrPauseUnsupported):
		status = http.StatusNotImplemented
	}
	d.fail(w, r, status, fmt.Sprintf("%s: %s", what, describe(err)))
}

func (d *Dashboard) requeue(w http.ResponseWriter, r *http.Request) {
	id := r.PostForm.Get("id")
	if err := d.q.Requeue(r.Context(), id, time.Time{}); err != nil {
		if errors.Is(err, durable.ErrNotFound) {
			err = fmt.Errorf("%w: there is no dead message %q", durable.ErrNotFound, id)
		}
		d.actionError(w, r, "Requeue failed", err)
		return
	}
	redirect(w, "message", url.Values{"id": {id}, "done": {"requeued"}})
}

// requeueAll brings back every dead message the form's filter keeps (the
// dead list's, by ID prefix and by kind, which the form carries: all of
// them without one), paging through the dead letters once: a message
// that dies meanwhile may or may not be included. It goes back to the
// dead list with the same filter.
func (d *Dashboard) requeueAll(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	f, err := filterOf(r.PostForm)
	if err != nil {
		d.fail(w, r, http.StatusBadRequest, "Requeue all refused: "+err.Error())
		return
	}
	n, cursor := 0, ""
	for {
		infos, next, err := d.q.List(ctx, durable.Dead, cursor, 100)
		if err != nil {
			d.actionError(w, r, fmt.Sprintf("Requeue all stopped after %d", n), err)
			return
		}
		for _, in := range infos {
			if !f.match(in) {
				continue
			}
			err := d.q.Requeue(ctx, in.ID, time.Time{})
			switch {
			case errors.Is(err, durable.ErrNotFound): // requeued or cancelled meanwhile
			case err != nil:
				d.actionError(w, r, fmt.Sprintf("Requeue all stopped after %d", n), err)
				return
			default:
				n++
			}
		}
		if next == "" {
			break
		}
		cursor = next
	}
	back := f.values()
	back.Set("n", strconv.Itoa(n))
	back.Set("done", "requeued-all")
	redirect(w, "dead", back)
}

func (d *Dashboard) cancelMessage(w http.ResponseWriter, r *http.Request) {
	id := r.PostForm.Get("id")
	found, err := d.q.Cancel(r.Context(), id)
	switch {
	case errors.Is(err, durable.ErrInFlight):
		d.actionError(w, r, "Cancel refused", fmt.Errorf("%w: %q is being delivered; ack it or let its lease expire", durable.ErrInFlight, id))
		return
	case err != nil:
		d.actionError(w, r, "Cancel failed", err)
		return
	case !found:
		d.actionError(w, r, "Cancel failed", fmt.Errorf("%w: there is no message %q", durable.ErrNotFound, id))
		return
	}
	back := "pending"
	if s, ok := stateOf(r.PostForm.Get("from")); ok {
		back = s.String()
	}
	redirect(w, back, url.Values{"id": {id}, "done": {"cancelled"}})
}

func (d *Dashboard) enqueue(w http.ResponseWriter, r *http.Request) {
	f := r.PostForm
	due, err := parseDue(f.Get("due"), time.Now())
	if err != nil {
		d.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	maxAttempts, timeout, err := parseLimits(f.Get("max_attempts"), f.Get("timeout"))
	if err != nil {
		d.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	// Browsers send a textarea's line ends as CRLF.
	payload := strings.ReplaceAll(f.Get("payload"), "\r\n", "\n")
	m := durable.Message{ID: f.Get("id"), Kind: f.Get("kind"), Payload: []byte(payload), Due: due,
		MaxAttempts: maxAttempts, Timeout: timeout}
	if err := d.q.Enqueue(r.Context(), m); err != nil {
		d.actionError(w, r, "Enqueue failed", err)
		return
	}
	redirect(w, "message", url.Values{"id": {m.ID}, "done": {"enqueued"}})
}

// pause pauses the queue (durable.Queue.Pause), in every process, and
// goes back to the overview.
func (d *Dashboard) pause(w http.ResponseWriter, r *http.Request) {
	if err := d.q.Pause(r.Context()); err != nil {
		d.actionError(w, r, "Pause failed", err)
		return
	}
	redirect(w, "./", url.Values{"done": {"paused"}})
}

// resume resumes the queue (durable.Queue.Resume), waking its receivers
// in every process, and goes back to the overview.
func (d *Dashboard) resume(w http.ResponseWriter, r *http.Request) {
	if err := d.q.Resume(r.Context()); err != nil {
		d.actionError(w, r, "Resume failed", err)
		return
	}
	redirect(w, "./", url.Values{"done": {"resumed"}})
}

// parseDue reads the enqueue form's due time: empty for now, a Go
// duration from now ("90s", "5m"), or an RFC 3339 time.
func parseDue(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("the due time %q is neither a duration (90s, 5m, 1h30m) nor an RFC 3339 time (2026-11-24T03:00:00Z)", s)
}

// parseLimits reads the enqueue form's max attempts (empty or 0 for the
// queue's) and timeout (empty or 0 for none, else a Go duration).
func parseLimits(attempts, timeout string) (int, time.Duration, error) {
	var n int
	if s := strings.TrimSpace(attempts); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 0 {
			return 0, 0, fmt.Errorf("the max attempts %q is not a whole number of 0 or more (0 or empty: the queue's)", attempts)
		}
	}
	var d time.Duration
	if s := strings.TrimSpace(timeout); s != "" && s != "0" {
		var err error
		if d, err = time.ParseDuration(s); err != nil || d < 0 {
			return 0, 0, fmt.Errorf("the timeout %q is not a duration of 0 or more (30s, 5m; empty: none)", timeout)
		}
	}
	return n, d, nil
}
