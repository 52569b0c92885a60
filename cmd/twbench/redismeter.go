package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// redisMeter counts the commands a Redis server executes between start
// and stop, from the calls of INFO commandstats. Commands that Lua
// scripts call count, each, as Redis counts them; the INFO calls that the
// meter itself sends do not. Every client of the server counts: the
// figure is meaningful on a server nothing else uses meanwhile.
type redisMeter struct {
	client *redis.Client
	before int64
}

// newRedisMeter returns a meter on the server of client.
func newRedisMeter(client *redis.Client) *redisMeter { return &redisMeter{client: client} }

// start notes the commands executed so far.
func (m *redisMeter) start(ctx context.Context) error {
	n, err := commandCalls(ctx, m.client)
	m.before = n
	return err
}

// stop returns the commands executed since start, less own: commands
// that the caller sent itself to watch the work, not part of it.
func (m *redisMeter) stop(ctx context.Context, own int64) (int64, error) {
	n, err := commandCalls(ctx, m.client)
	if err != nil {
		return 0, err
	}
	return n - m.before - own, nil
}

// commandCalls returns the calls of every command in INFO commandstats
// but INFO.
func commandCalls(ctx context.Context, client *redis.Client) (int64, error) {
	info, err := client.Info(ctx, "commandstats").Result()
	if err != nil {
		return 0, err
	}
	return sumCommandCalls(info)
}

// sumCommandCalls adds up the calls= fields of the cmdstat_ lines of an
// INFO commandstats reply, leaving out cmdstat_info.
func sumCommandCalls(info string) (int64, error) {
	var total int64
	seen := false
	for line := range strings.Lines(info) {
		name, fields, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		seen = true
		if name == "cmdstat_info" {
			continue
		}
		calls, ok := cmdstatCalls(fields)
		if !ok {
			return 0, fmt.Errorf("INFO commandstats: no calls= in %q", line)
		}
		total += calls
	}
	if !seen {
		return 0, fmt.Errorf("INFO commandstats: no cmdstat_ line in %q", info)
	}
	return total, nil
}

// cmdstatCalls returns n of the calls=n field of a commandstats line's
// fields.
func cmdstatCalls(fields string) (int64, bool) {
	for f := range strings.SplitSeq(fields, ",") {
		if v, ok := strings.CutPrefix(f, "calls="); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
