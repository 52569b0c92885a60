package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

const usageText = `twq inspects and repairs a durable queue (a file, or a queue on Redis, PostgreSQL or MySQL).

Usage:
  twq [-json] [-timeout D] <queue> <command> [args]

<queue> is the path of an existing queue file, or
  redis://[user:password@]host:port/db?queue=NAME   (rediss:// for TLS,
  unix:///path/redis.sock?queue=NAME for a unix socket), or
  postgres://[user:password@]host:port/db?queue=NAME[&schema=S]   (postgresql:// too; the
  other parameters are libpq's, e.g. sslmode, or host=/run/postgresql for a socket): the
  tables of durable/pgstore must be there (twq creates and migrates none), and a queue
  name with no rows is an empty queue, or
  mysql://[user:password@]host[:port]/db?queue=NAME   (&socket=/path/mysqld.sock for a unix
  socket; the other parameters are go-sql-driver/mysql's): the tables of
  durable/mysqlstore must be there

Read-only commands (they write nothing, to the file, to Redis or to PostgreSQL, whose
connections are then read-only):
  stats                                 counts of pending, in-flight and dead messages, next due time
  dead [-limit N]                       dead letters, oldest death first (default limit 20)
  get ID                                one message, whatever its state: its kind, state,
                                        attempts, max attempts (the queue's unless its own),
                                        timeout of each attempt (none unless set), times, payload
  list pending|in-flight|dead [-limit N] [-cursor C] [-kind K]
                                        one page of messages in a state (default limit 20),
                                        with their kind; the next page's cursor is printed
                                        after it. -kind K shows only those of kind K (-kind ''
                                        those without one), reading at most 5000 messages a page
                                        to find them (it says how many it read)
  schedules                             the series of Queue.Schedule, by name: the last time
                                        enqueued and the next

Commands that write:
  requeue ID [-at TIME | -in DURATION]  bring a dead message back, pending (due now by default)
  cancel ID                             delete a pending or dead message (not one in flight)
  enqueue ID [-payload S | -payload-file F] [-at TIME | -in DURATION]
                                        add a message, or replace the one with that ID;
                                        -payload-file - reads stdin; due now by default
  pause                                 stop every process from receiving from the queue (it is
                                        kept in the queue: enqueues, cancels and the deliveries
                                        under way go on) until resume
  resume                                let receivers take messages again, waking them at once

The dashboard:
  serve [-addr HOST:PORT] [-read-only] [-auth-file F] [-max-attempts N] [-allow-host NAME]
                                        serve a web dashboard of the queue until Ctrl-C
                                        (default -addr 127.0.0.1:8080, loopback only). It runs a
                                        queue, which reaps expired leases as any queue does
                                        (-max-attempts: the service's, default 10). It holds a
                                        queue file only while a request (or a reap, or a sample
                                        for the chart) runs, so a service can open the file
                                        beside it; while a service holds the file, pages wait
                                        up to -timeout for it, then answer 503 (mount
                                        durableweb.Handler in the service to watch it then).
                                        -read-only serves no action. -auth-file holds a bearer
                                        token, or user:password for basic auth (for a browser);
                                        it is required to listen on other than loopback
                                        (plain HTTP: put TLS in front, or use an SSH tunnel).
                                        It answers only requests whose Host is its address or
                                        localhost, 127.0.0.1 or [::1] with its port (any IP with
                                        its port if it listens on every interface), and 421 to
                                        others (DNS rebinding); -allow-host NAME or NAME:PORT
                                        (repeatable, or a comma list) adds a name (a proxy's: a
                                        NAME without a port is allowed with any port).
                                        A wrong -auth-file login is answered after 1s, and one
                                        address's logins are checked one at a time: N wrong
                                        guesses from an address take at least N seconds (more
                                        than 32 waiting get 429). serve logs each failed login,
                                        each action (done or refused) with its user, and each
                                        request refused for its Host, with the remote address,
                                        on stderr (log/slog text)

Flags (before <queue>, or after the command):
  -json        print JSON: one object for stats, get, requeue, cancel, enqueue, pause and resume;
               an array for dead and schedules, and an object {"messages": [...], "next_cursor": "..."} for list
               (with "scanned", how many messages were read, after -kind)
  -timeout D   how long to wait for the queue file's lock, or for Redis or PostgreSQL to answer
               (default 2s)

IDs, kinds, payloads and error texts are printed escaped: control characters (C0, ESC, DEL,
C1) and bytes that are not UTF-8 show as \x1b, \n, \u009b, \xff, never raw (in JSON, as \u escapes).
TIME is RFC 3339 (2026-11-24T03:00:00Z), DURATION a Go duration (90s, 5m, 1h30m).
Exit status: 0 done, 1 failed (one line on stderr says why), 2 wrong command line.
`

// defaultTimeout is how long twq waits for a file held by another process,
// or for Redis or PostgreSQL to answer, by default.
const defaultTimeout = 2 * time.Second

// errHelp is returned by parseCommandLine after printing the usage for -h.
var errHelp = errors.New("help")

// A usageError is a wrong command line: twq exits with exitUsage and a
// hint to -h.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// options are the flags that apply to every command, and stdin.
type options struct {
	json    bool
	timeout time.Duration
	stdin   io.Reader // for enqueue -payload-file -
	stderr  io.Writer // for serve's log
}

// register adds the common flags to fs, so that they may also follow the
// command.
func (o *options) register(fs *flag.FlagSet) {
	fs.BoolVar(&o.json, "json", o.json, "print JSON")
	fs.DurationVar(&o.timeout, "timeout", o.timeout, "how long to wait for the file's lock, or for Redis or PostgreSQL")
}

// newFlagSet returns a flag set that reports its errors as values, and
// has the common flags.
func newFlagSet(name string, o *options) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	o.register(fs)
	return fs
}

// parseInterleaved parses args with fs, allowing flags before, between and
// after the positional arguments, which it returns. After "--" every
// argument is positional (an ID that starts with '-').
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, errHelp
			}
			return nil, usagef("%s: %v", fs.Name(), err)
		}
		consumed := len(args) - fs.NArg()
		last := ""
		if consumed > 0 {
			last = args[consumed-1]
		}
		args = fs.Args()
		if last == "--" {
			return append(positional, args...), nil
		}
		if len(args) == 0 {
			return positional, nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

// invocation is a parsed command line, ready to run.
type invocation struct {
	opts   options
	target target
	cmd    *command
	act    action
	stdout io.Writer
}

// parseCommandLine parses twq's arguments. It returns nil and no error
// after printing the usage for -h.
func parseCommandLine(args []string, stdin io.Reader, stderr io.Writer) (*invocation, error) {
	inv := &invocation{opts: options{timeout: defaultTimeout, stdin: stdin, stderr: stderr}}
	fs := newFlagSet("twq", &inv.opts)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stderr, usageText)
			return nil, nil
		}
		return nil, usagef("%v", err)
	}
	rest := fs.Args()
	switch len(rest) {
	case 0:
		return nil, usagef("name a queue (a file path, or a redis:// or postgres:// URL) and a command")
	case 1:
		return nil, usagef("name a command after the queue %s (stats, list, get, dead, requeue, cancel, enqueue, serve)", rest[0])
	}
	var err error
	if inv.target, err = parseTarget(rest[0]); err != nil {
		return nil, err
	}
	name := rest[1]
	inv.cmd = commands[name]
	if inv.cmd == nil {
		return nil, usagef("unknown command %q (stats, list, get, dead, requeue, cancel, enqueue, serve)", name)
	}
	inv.act, err = inv.cmd.parse(name, rest[2:], &inv.opts)
	if errors.Is(err, errHelp) {
		fmt.Fprint(stderr, usageText)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if inv.opts.timeout <= 0 {
		return nil, usagef("-timeout must be positive, got %v", inv.opts.timeout)
	}
	return inv, nil
}

// reportError prints err, if any, as one line on stderr and returns the
// exit code.
func reportError(stderr io.Writer, err error) int {
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "twq: %s (twq -h for help)\n", oneLine(ue.msg))
		return exitUsage
	default:
		fmt.Fprintf(stderr, "twq: %s\n", oneLine(err.Error()))
		return exitError
	}
}

// oneLine keeps a message on one line, its white space runs made one
// space, and escapes what else a terminal could act on in it (an error
// may quote what a queue holds: see escapeText).
func oneLine(s string) string {
	return escapeControls(strings.Join(strings.Fields(s), " "))
}
