package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// An action is a parsed command, run on an open queue.
type action func(ctx context.Context, h *handle, p *printer) error

// A command is one of twq's commands.
type command struct {
	// readOnly commands write nothing to the queue.
	readOnly bool
	// lazy commands (serve) hold a queue file only while they use it
	// (see lazyFile).
	lazy bool
	// parse reads the command's arguments (after its name), and the
	// common flags among them into o.
	parse func(name string, args []string, o *options) (action, error)
}

// commands are twq's commands by name. get and list are in inspect.go,
// serve in serve.go.
var commands = map[string]*command{
	"stats":     {readOnly: true, parse: parseStats},
	"dead":      {readOnly: true, parse: parseDead},
	"get":       {readOnly: true, parse: parseGet},
	"list":      {readOnly: true, parse: parseList},
	"schedules": {readOnly: true, parse: parseSchedules},
	"requeue":   {parse: parseRequeue},
	"cancel":    {parse: parseCancel},
	"enqueue":   {parse: parseEnqueue},
	"pause":     {parse: parsePause(true)},
	"resume":    {parse: parsePause(false)},
	"serve":     {lazy: true, parse: parseServe},
}

// defaultLimit is the number of messages dead and list show by default.
const defaultLimit = 20

// execute opens the queue, runs the command, and lets go of the queue.
func (inv *invocation) execute() error {
	ctx := context.Background()
	h, err := open(ctx, inv.target, inv.opts, inv.cmd)
	if err != nil {
		return err
	}
	defer h.close()
	return inv.act(ctx, h, &printer{w: inv.stdout, json: inv.opts.json})
}

// argsExactly parses args and checks that they hold want positional
// arguments, named by what in messages.
func argsExactly(f *flag.FlagSet, args []string, want int, what string) ([]string, error) {
	name := f.Name()
	pos, err := parseInterleaved(f, args)
	if err != nil {
		return nil, err
	}
	switch {
	case len(pos) < want:
		return nil, usagef("%s: missing %s", name, what)
	case len(pos) > want:
		return nil, usagef("%s: unexpected argument %q", name, pos[want])
	}
	return pos, nil
}

func parseStats(name string, args []string, o *options) (action, error) {
	if _, err := argsExactly(newFlagSet(name, o), args, 0, ""); err != nil {
		return nil, err
	}
	return func(ctx context.Context, h *handle, p *printer) error {
		st, err := h.store.Stats(ctx)
		if err != nil {
			return fmt.Errorf("stats: %w", err)
		}
		return p.stats(st)
	}, nil
}

func parseDead(name string, args []string, o *options) (action, error) {
	f := newFlagSet(name, o)
	var limit int
	f.IntVar(&limit, "limit", defaultLimit, "how many dead letters to show")
	if _, err := argsExactly(f, args, 0, ""); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, usagef("%s: -limit must be positive, got %d", name, limit)
	}
	return func(ctx context.Context, h *handle, p *printer) error {
		infos, _, err := h.store.List(ctx, store.ListParams{State: store.Dead, Limit: limit})
		if err != nil {
			return fmt.Errorf("dead: %w", err)
		}
		dead := make([]durable.Message, len(infos))
		for i, info := range infos {
			dead[i] = durable.Message{ID: info.ID, Payload: info.Payload, Due: info.DiedAt}
		}
		return p.deadLetters(dead)
	}, nil
}

func parseRequeue(name string, args []string, o *options) (action, error) {
	f := newFlagSet(name, o)
	var when dueFlags
	when.register(f)
	pos, err := argsExactly(f, args, 1, "the ID of the dead message to requeue")
	if err != nil {
		return nil, err
	}
	id := pos[0]
	due, err := when.due(name, time.Now())
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, h *handle, p *printer) error {
		err := h.store.Requeue(ctx, store.RequeueParams{ID: id, Due: due})
		if errors.Is(err, durable.ErrNotFound) {
			return fmt.Errorf("requeue: there is no dead message %q", id)
		}
		if err != nil {
			return fmt.Errorf("requeue %q: %w", id, err)
		}
		return p.done(doneJSON{Action: "requeue", ID: id, Due: due})
	}, nil
}

// parsePause parses pause (paused true) and resume, which take no
// argument and set the queue's paused flag in the store (see
// durable.Queue.Pause): on Redis, a resume wakes the receivers of every
// process.
func parsePause(paused bool) func(name string, args []string, o *options) (action, error) {
	return func(name string, args []string, o *options) (action, error) {
		if _, err := argsExactly(newFlagSet(name, o), args, 0, ""); err != nil {
			return nil, err
		}
		return func(ctx context.Context, h *handle, p *printer) error {
			pauser, ok := h.store.(store.Pauser)
			if !ok {
				return fmt.Errorf("%s: %w", name, store.ErrPauseUnsupported)
			}
			if err := pauser.SetPaused(ctx, paused); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			return p.done(doneJSON{Action: name})
		}, nil
	}
}

func parseCancel(name string, args []string, o *options) (action, error) {
	pos, err := argsExactly(newFlagSet(name, o), args, 1, "the ID of the message to cancel")
	if err != nil {
		return nil, err
	}
	id := pos[0]
	return func(ctx context.Context, h *handle, p *printer) error {
		found, err := h.store.Cancel(ctx, id)
		switch {
		case errors.Is(err, durable.ErrInFlight):
			return fmt.Errorf("cancel: %q is in flight: it can be cancelled once its delivery ends (acked, failed, or its lease expired)", id)
		case err != nil:
			return fmt.Errorf("cancel %q: %w", id, err)
		case !found:
			return fmt.Errorf("cancel: there is no message %q", id)
		}
		return p.done(doneJSON{Action: "cancel", ID: id})
	}, nil
}

func parseEnqueue(name string, args []string, o *options) (action, error) {
	f := newFlagSet(name, o)
	var when dueFlags
	when.register(f)
	var payload, payloadFile string
	var payloadSet bool
	f.Func("payload", "the payload, as text", func(s string) error {
		payload, payloadSet = s, true
		return nil
	})
	f.StringVar(&payloadFile, "payload-file", "", "read the payload from this file (- for stdin)")
	pos, err := argsExactly(f, args, 1, "the ID of the message to enqueue")
	if err != nil {
		return nil, err
	}
	if payloadSet && payloadFile != "" {
		return nil, usagef("%s: give -payload or -payload-file, not both", name)
	}
	due, err := when.due(name, time.Now())
	if err != nil {
		return nil, err
	}
	// The payload is read, and the message checked, before the queue is
	// opened: a wrong message leaves the queue untouched.
	m := durable.Message{ID: pos[0], Payload: []byte(payload), Due: due}
	if payloadFile != "" {
		if m.Payload, err = readPayload(payloadFile, o.stdin); err != nil {
			return nil, err
		}
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	return func(ctx context.Context, h *handle, p *printer) error {
		if err := h.store.Enqueue(ctx, []durable.Message{m}); err != nil {
			return fmt.Errorf("enqueue %q: %w", m.ID, err)
		}
		return p.done(doneJSON{Action: "enqueue", ID: m.ID, Due: due, PayloadBytes: len(m.Payload)})
	}, nil
}

// readPayload reads the payload of -payload-file: the file, or stdin for
// "-", up to one byte more than durable.MaxPayloadLen (so that Validate
// reports a payload that is too large without reading all of it).
func readPayload(file string, stdin io.Reader) ([]byte, error) {
	r := stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("enqueue: reading the payload: %w", err)
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, durable.MaxPayloadLen+1))
	if err != nil {
		return nil, fmt.Errorf("enqueue: reading the payload: %w", err)
	}
	return b, nil
}

func parseSchedules(name string, args []string, o *options) (action, error) {
	if _, err := argsExactly(newFlagSet(name, o), args, 0, ""); err != nil {
		return nil, err
	}
	return func(ctx context.Context, h *handle, p *printer) error {
		keeper, ok := h.store.(store.SeriesKeeper)
		if !ok {
			return fmt.Errorf("schedules: %w", store.ErrSeriesUnsupported)
		}
		list, err := keeper.ListSeries(ctx)
		if err != nil {
			return fmt.Errorf("schedules: %w", err)
		}
		return p.schedules(list)
	}, nil
}
