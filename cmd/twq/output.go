package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// A printer writes a command's result: an aligned table for people, or
// JSON for scripts.
type printer struct {
	w    io.Writer
	json bool
}

// encode writes v as indented JSON, with no character a terminal acts
// on left raw (escapeJSON).
func (p *printer) encode(v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := p.w.Write(escapeJSON(buf.Bytes()))
	return err
}

// table writes rows, the first a header, as aligned columns.
func (p *printer) table(rows [][]string) error {
	tw := tabwriter.NewWriter(p.w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		for i, cell := range r {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, cell)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// statsJSON is the JSON of stats. next_due is absent when nothing is
// pending.
type statsJSON struct {
	Pending  int       `json:"pending"`
	InFlight int       `json:"in_flight"`
	Dead     int       `json:"dead"`
	NextDue  time.Time `json:"next_due,omitzero"`
	Paused   bool      `json:"paused"`
}

func (p *printer) stats(st durable.Stats) error {
	if p.json {
		return p.encode(statsJSON{Pending: st.Pending, InFlight: st.InFlight, Dead: st.Dead, NextDue: utc(st.NextDue),
			Paused: st.Paused})
	}
	next := "-"
	if !st.NextDue.IsZero() {
		next = timeCell(st.NextDue)
	}
	return p.table([][]string{
		{"pending", strconv.Itoa(st.Pending)},
		{"in-flight", strconv.Itoa(st.InFlight)},
		{"dead", strconv.Itoa(st.Dead)},
		{"next due", next},
		{"paused", yesNo(st.Paused)},
	})
}

// yesNo is "yes" for true, "no" for false.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// deadJSON is a dead letter in JSON: the payload is in payload if it is
// valid UTF-8, else in payload_base64.
type deadJSON struct {
	ID string `json:"id"`
	payloadJSON
	DiedAt time.Time `json:"died_at,omitzero"`
}

// payloadJSON holds a payload as text when it is valid UTF-8 (payload),
// and in base64 when it is not (payload_base64): exactly one is present.
type payloadJSON struct {
	Payload       *string `json:"payload,omitempty"`
	PayloadBase64 []byte  `json:"payload_base64,omitempty"`
}

func newPayloadJSON(b []byte) payloadJSON {
	if utf8.Valid(b) {
		s := string(b)
		return payloadJSON{Payload: &s}
	}
	return payloadJSON{PayloadBase64: b}
}

func (p *printer) deadLetters(dead []durable.Message) error {
	if p.json {
		out := make([]deadJSON, 0, len(dead))
		for _, m := range dead {
			out = append(out, deadJSON{ID: m.ID, payloadJSON: newPayloadJSON(m.Payload), DiedAt: utc(m.Due)})
		}
		return p.encode(out)
	}
	if len(dead) == 0 {
		_, err := fmt.Fprintln(p.w, "no dead letters")
		return err
	}
	rows := [][]string{{"ID", "DIED", "PAYLOAD"}}
	for _, m := range dead {
		rows = append(rows, []string{strconv.Quote(m.ID), timeCell(m.Due), payloadCell(m.Payload)})
	}
	return p.table(rows)
}

// doneJSON is the JSON of a command that wrote: due is absent when the
// message is due now.
type doneJSON struct {
	Action       string    `json:"action"`
	ID           string    `json:"id,omitempty"`
	Due          time.Time `json:"due,omitzero"`
	PayloadBytes int       `json:"payload_bytes,omitempty"`
}

func (p *printer) done(d doneJSON) error {
	if p.json {
		d.Due = utc(d.Due)
		return p.encode(d)
	}
	due := "now"
	if !d.Due.IsZero() {
		due = timeCell(d.Due)
	}
	var err error
	switch d.Action {
	case "requeue":
		_, err = fmt.Fprintf(p.w, "requeued %q, due %s\n", d.ID, due)
	case "cancel":
		_, err = fmt.Fprintf(p.w, "cancelled %q\n", d.ID)
	case "enqueue":
		_, err = fmt.Fprintf(p.w, "enqueued %q (%d bytes), due %s\n", d.ID, d.PayloadBytes, due)
	case "pause":
		_, err = fmt.Fprintln(p.w, "paused: no process receives from the queue until resume")
	case "resume":
		_, err = fmt.Fprintln(p.w, "resumed")
	}
	return err
}

// utc is t in UTC, the zero time left as it is.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

// timeCell shows t for people: RFC 3339 in the local zone, and how far
// from now.
func timeCell(t time.Time) string {
	d := time.Until(t).Round(time.Second)
	rel := "now"
	switch {
	case d > 0:
		rel = "in " + d.String()
	case d < 0:
		rel = (-d).String() + " ago"
	}
	return t.Local().Format(time.RFC3339) + " (" + rel + ")"
}

// maxPayloadCell is how many bytes of a payload a table shows.
const maxPayloadCell = 40

// payloadCell shows a payload for people: quoted, cut after
// maxPayloadCell bytes (at a character boundary), with its size if cut.
func payloadCell(b []byte) string {
	if len(b) <= maxPayloadCell {
		return strconv.Quote(string(b))
	}
	cut := maxPayloadCell
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return strconv.Quote(string(b[:cut])) + fmt.Sprintf("... (%d bytes)", len(b))
}

// scheduleJSON is a series of durable.Queue.Schedule in JSON.
type scheduleJSON struct {
	Name string `json:"name"`
	// Enqueued is the latest time whose message was written (usually in
	// the future, pending); Last is the same, under its old name.
	Enqueued time.Time `json:"enqueued,omitzero"`
	Last     time.Time `json:"last,omitzero"`
	Next     time.Time `json:"next,omitzero"`
}

// schedules prints the series by name: the latest time enqueued (its
// message usually pending still), and the next.
func (p *printer) schedules(list []store.Series) error {
	if p.json {
		out := make([]scheduleJSON, len(list))
		for i, s := range list {
			out[i] = scheduleJSON{Name: s.Name, Enqueued: utc(s.Last), Last: utc(s.Last), Next: utc(s.Next)}
		}
		return p.encode(out)
	}
	rows := [][]string{{"NAME", "ENQUEUED", "NEXT"}}
	for _, s := range list {
		last, next := "-", "-"
		if !s.Last.IsZero() {
			last = timeCell(s.Last)
		}
		if !s.Next.IsZero() {
			next = timeCell(s.Next)
		}
		rows = append(rows, []string{strconv.Quote(s.Name), last, next})
	}
	return p.table(rows)
}
