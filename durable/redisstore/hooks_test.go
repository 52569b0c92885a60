package redisstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// cmdHook is a go-redis hook that runs a function around every command
// (pipelines and transactions pass unchanged).
type cmdHook func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error

func (h cmdHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h cmdHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { return h(ctx, cmd, next) }
}

func (h cmdHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// pipelineHook is a go-redis hook that runs a function around every
// pipeline and transaction (commands pass unchanged).
type pipelineHook func(ctx context.Context, cmds []redis.Cmder, next redis.ProcessPipelineHook) error

func (h pipelineHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h pipelineHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h pipelineHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { return h(ctx, cmds, next) }
}

// isScript reports whether cmd is an EVALSHA of sc. (A script Redis does
// not have yet is sent again with EVAL: tests that need every call of a
// script seen run it once first.)
func isScript(cmd redis.Cmder, sc *redis.Script) bool {
	a := cmd.Args()
	return len(a) > 1 && strings.EqualFold(fmt.Sprint(a[0]), "evalsha") && fmt.Sprint(a[1]) == sc.Hash()
}

// scriptKeys returns the KEYS of a script command.
func scriptKeys(cmd redis.Cmder) []string {
	a := cmd.Args()
	if len(a) < 3 {
		return nil
	}
	var n int
	if _, err := fmt.Sscan(fmt.Sprint(a[2]), &n); err != nil || len(a) < 3+n {
		return nil
	}
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprint(a[3+i])
	}
	return keys
}
