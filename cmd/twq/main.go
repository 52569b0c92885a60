// Command twq inspects and repairs a durable queue (package durable) kept
// in a file, on Redis, on PostgreSQL (durable/pgstore) or on MySQL
// (durable/mysqlstore): stats, get, list by state (and by kind), dead
// letters, requeue, cancel, enqueue; and serve, a web dashboard of the
// queue (package durableweb).
//
//	twq [-json] [-timeout D] <queue> <command> [args]
//
// <queue> is a file path, or redis://[user:password@]host:port/db?queue=NAME
// (rediss:// for TLS), or postgres://[user:password@]host:port/db?queue=NAME
// (&schema=S for pgstore.WithSchema), or mysql://[user:password@]host[:port]/db?queue=NAME
// (&socket=PATH for a unix socket). Run twq -h for the commands.
// Read-only commands write nothing to the file, to Redis or to PostgreSQL.
package main

import (
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the command failed: see the line on stderr
	exitUsage = 2 // the command line is wrong
)

// run is twq with its arguments and streams, returning the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	silenceRedisLog()
	inv, err := parseCommandLine(args, stdin, stderr)
	if err != nil {
		return reportError(stderr, err)
	}
	if inv == nil { // -h
		return exitOK
	}
	inv.stdout = stdout
	return reportError(stderr, inv.execute())
}
