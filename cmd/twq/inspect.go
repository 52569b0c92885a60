package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// An inspector reads what a queue holds: a *durable.Queue is one, and
// so is a store through storeInspector.
type inspector interface {
	// Get returns what the queue holds under id, or an error wrapping
	// durable.ErrNotFound.
	Get(ctx context.Context, id string) (durable.Info, error)
	// List returns up to limit messages in state s after cursor, and the
	// cursor of the next page ("" at the end).
	List(ctx context.Context, s durable.State, cursor string, limit int) ([]durable.Info, string, error)
}

// inspect runs f with an inspector over h's store: the store itself, not
// a durable.Queue, whose New would reap expired leases (a write).
func inspect(h *handle, f func(inspector) error) error { return f(storeInspector{h.store}) }

// storeInspector is a store as an inspector.
type storeInspector struct{ store.Store }

// List implements inspector.
func (s storeInspector) List(ctx context.Context, st durable.State, cursor string, limit int) ([]durable.Info, string, error) {
	return s.Store.List(ctx, store.ListParams{State: st, Cursor: cursor, Limit: limit})
}

func parseGet(name string, args []string, o *options) (action, error) {
	pos, err := argsExactly(newFlagSet(name, o), args, 1, "the ID of the message to show")
	if err != nil {
		return nil, err
	}
	id := pos[0]
	return func(ctx context.Context, h *handle, p *printer) error {
		return inspect(h, func(in inspector) error {
			info, err := in.Get(ctx, id)
			if errors.Is(err, durable.ErrNotFound) {
				return fmt.Errorf("get: there is no message %q", id)
			}
			if err != nil {
				return fmt.Errorf("get %q: %w", id, err)
			}
			return p.info(info)
		})
	}, nil
}

// states are the states list takes, by name.
var states = map[string]durable.State{
	durable.Pending.String():  durable.Pending,
	durable.InFlight.String(): durable.InFlight,
	durable.Dead.String():     durable.Dead,
}

// maxScan bounds how many messages list reads to fill a page with
// -kind, as the dashboard's lists do.
const maxScan = 5000

func parseList(name string, args []string, o *options) (action, error) {
	f := newFlagSet(name, o)
	var limit int
	var cursor string
	var kind *string // nil without -kind
	f.IntVar(&limit, "limit", defaultLimit, "how many messages to show")
	f.StringVar(&cursor, "cursor", "", "show the page after this cursor")
	f.Func("kind", "show only the messages of this kind ('' for those without one)", func(s string) error {
		kind = &s
		return nil
	})
	pos, err := argsExactly(f, args, 1, "the state to list: pending, in-flight or dead")
	if err != nil {
		return nil, err
	}
	state, ok := states[pos[0]]
	if !ok {
		return nil, usagef("%s: unknown state %q: pending, in-flight or dead", name, pos[0])
	}
	if limit <= 0 {
		return nil, usagef("%s: -limit must be positive, got %d", name, limit)
	}
	return func(ctx context.Context, h *handle, p *printer) error {
		return inspect(h, func(in inspector) error {
			page, next, scanned, err := filteredPage(ctx, in, state, kind, cursor, limit)
			if err != nil {
				return fmt.Errorf("list %s: %w", state, err)
			}
			return p.list(page, next, kind, scanned)
		})
	}, nil
}

// filteredPage returns up to limit messages in state s after cursor, of the
// kind *kind if kind is not nil, the cursor of the next page, and how
// many messages it read. With a kind it reads pages of the remaining
// limit, so that the cursor of the last page it read is the right one to
// go on from, and stops after maxScan messages.
func filteredPage(ctx context.Context, in inspector, s durable.State, kind *string, cursor string, limit int) ([]durable.Info, string, int, error) {
	if kind == nil {
		page, next, err := in.List(ctx, s, cursor, limit)
		return page, next, len(page), err
	}
	var out []durable.Info
	scanned := 0
	for len(out) < limit && scanned < maxScan {
		page, next, err := in.List(ctx, s, cursor, limit-len(out))
		if err != nil {
			return nil, "", scanned, err
		}
		scanned += len(page)
		for _, i := range page {
			if i.Kind == *kind {
				out = append(out, i)
			}
		}
		cursor = next
		if next == "" {
			break
		}
	}
	return out, cursor, scanned, nil
}

// infoJSON is a message in JSON, for get and list.
type infoJSON struct {
	ID    string `json:"id"`
	State string `json:"state"`
	// Kind is absent for a message without a kind, MaxAttempts for one
	// that has the queue's, and Timeout (a Go duration: "1m30s") for one
	// without a timeout.
	Kind        string `json:"kind,omitempty"`
	MaxAttempts int    `json:"max_attempts,omitempty"`
	Timeout     string `json:"timeout,omitempty"`
	payloadJSON
	Attempt    int       `json:"attempt"`
	LastError  string    `json:"last_error,omitempty"`
	EnqueuedAt time.Time `json:"enqueued_at,omitzero"`
	Due        time.Time `json:"due,omitzero"`
	Deadline   time.Time `json:"deadline,omitzero"`
	DiedAt     time.Time `json:"died_at,omitzero"`
}

func newInfoJSON(i durable.Info) infoJSON {
	var timeout string
	if i.Timeout > 0 {
		timeout = i.Timeout.String()
	}
	return infoJSON{
		ID: i.ID, State: i.State.String(), Kind: i.Kind, MaxAttempts: i.MaxAttempts, Timeout: timeout,
		payloadJSON: newPayloadJSON(i.Payload), Attempt: i.Attempt, LastError: i.LastError, EnqueuedAt: utc(i.EnqueuedAt),
		Due: utc(i.Due), Deadline: utc(i.Deadline), DiedAt: utc(i.DiedAt),
	}
}

// listJSON is a page of list in JSON: next_cursor is "" on the last page.
// With -kind, scanned is how many messages were read to find these.
type listJSON struct {
	Messages   []infoJSON `json:"messages"`
	NextCursor string     `json:"next_cursor"`
	Scanned    *int       `json:"scanned,omitempty"`
}

func (p *printer) info(i durable.Info) error {
	if p.json {
		return p.encode(newInfoJSON(i))
	}
	maxAttempts, timeout := "the queue's", "none"
	if i.MaxAttempts > 0 {
		maxAttempts = strconv.Itoa(i.MaxAttempts)
	}
	if i.Timeout > 0 {
		timeout = i.Timeout.String()
	}
	rows := [][]string{
		{"id", strconv.Quote(i.ID)},
		{"kind", kindCell(i.Kind, "none")},
		{"state", i.State.String()},
		{"attempt", strconv.Itoa(i.Attempt)},
		{"max attempts", maxAttempts},
		{"timeout", timeout},
	}
	if i.LastError != "" {
		rows = append(rows, []string{"last error", escapeText(i.LastError)})
	}
	for _, t := range []struct {
		name string
		at   time.Time
	}{{"enqueued", i.EnqueuedAt}, {"due", i.Due}, {"lease ends", i.Deadline}, {"died", i.DiedAt}} {
		if !t.at.IsZero() {
			rows = append(rows, []string{t.name, timeCell(t.at)})
		}
	}
	rows = append(rows, []string{"payload", payloadCell(i.Payload)})
	return p.table(rows)
}

// list prints a page of messages, and how to go on: with -kind (kind not
// nil), how many messages were read to find them.
func (p *printer) list(page []durable.Info, next string, kind *string, scanned int) error {
	if p.json {
		out := listJSON{Messages: make([]infoJSON, 0, len(page)), NextCursor: next}
		for _, i := range page {
			out.Messages = append(out.Messages, newInfoJSON(i))
		}
		if kind != nil {
			out.Scanned = &scanned
		}
		return p.encode(out)
	}
	if len(page) == 0 {
		if _, err := fmt.Fprintln(p.w, "no messages"+ofKind(kind)); err != nil {
			return err
		}
	} else {
		rows := [][]string{{"ID", "KIND", "WHEN", "ATTEMPT", "LAST ERROR", "PAYLOAD"}}
		for _, i := range page {
			rows = append(rows, []string{strconv.Quote(i.ID), kindCell(i.Kind, "-"), timeCell(stateTime(i)), strconv.Itoa(i.Attempt),
				escapeText(i.LastError), payloadCell(i.Payload)})
		}
		if err := p.table(rows); err != nil {
			return err
		}
	}
	if next == "" {
		return nil
	}
	var err error
	if kind != nil {
		_, err = fmt.Fprintf(p.w, "read %d messages to find these (at most %d a page); more: -cursor %s\n", scanned, maxScan, strconv.Quote(next))
	} else {
		_, err = fmt.Fprintf(p.w, "more: -cursor %s\n", strconv.Quote(next))
	}
	return err
}

// kindCell shows a kind for people: quoted (strconv.Quote, so that no
// character a terminal acts on is printed raw), or none for "".
func kindCell(kind, none string) string {
	if kind == "" {
		return none
	}
	return strconv.Quote(kind)
}

// ofKind says which kind a list was filtered by: "" for none.
func ofKind(kind *string) string {
	switch {
	case kind == nil:
		return ""
	case *kind == "":
		return " without a kind"
	}
	return " of kind " + strconv.Quote(*kind)
}

// stateTime is the time that orders a message in its state's list: due
// if pending, lease end if in flight, death if dead.
func stateTime(i durable.Info) time.Time {
	switch i.State {
	case durable.InFlight:
		return i.Deadline
	case durable.Dead:
		return i.DiedAt
	}
	return i.Due
}
