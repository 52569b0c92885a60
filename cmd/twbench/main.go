// Command twbench measures the timing wheel of package timingwheel against
// Go's runtime timers (time.AfterFunc), side by side in one process, and
// prints a table with the ratio ours/runtime beside every figure. Its
// durable scenario measures package durable's queue, on a bbolt file, on
// its own (no runtime column), or on Redis or PostgreSQL with -store; its
// asynq scenario measures it on Redis against hibiken/asynq on the same
// server (asynq in the runtime column), and its river scenario on
// PostgreSQL (durable/pgstore) against riverqueue/river (River in the
// runtime column), in a scratch database it drops afterwards:
//
//	go run ./cmd/twbench asynq -store redis://localhost:6379/0
//	go run ./cmd/twbench river -store 'postgres:///postgres?host=/tmp&user=postgres'
//	go run ./cmd/twbench river -store postgres    # a server of its own, fsync on
//
// Run it with -quick for a run of every scenario at reduced size (under a
// minute on two cores):
//
//	go run ./cmd/twbench -quick
//
// or name scenarios to run them alone, at full size by default:
//
//	go run ./cmd/twbench startstop -n 1M,5M
//	go run ./cmd/twbench fire -fire-n 2M -window 4s -plot fire.png
//
// See go run ./cmd/twbench -help for every flag and scenario.
package main

import "os"

// main runs twbench and exits with run's status.
func main() {
	if spec, ok := os.LookupEnv(rateChildEnv); ok {
		os.Exit(rateChildMain(spec, os.Stdout, os.Stderr))
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
