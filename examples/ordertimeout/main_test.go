package main

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/internal/syncbuf"
)

func ids(re *regexp.Regexp, out string) []string {
	var got []string
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		got = append(got, m[1])
	}
	return got
}

var (
	placedRE = regexp.MustCompile(`placed (\S+) `)
	paidRE   = regexp.MustCompile(`paid (\S+)\n`)
	closedRE = regexp.MustCompile(`closed unpaid (\S+) `)
)

// TestUnpaidOrdersAreClosedAfterARestart places orders, stops the program
// before they are due, and starts it again: it must close exactly the
// unpaid ones.
func TestUnpaidOrdersAreClosedAfterARestart(t *testing.T) {
	db := filepath.Join(t.TempDir(), "orders.db")
	c := config{db: db, orders: 10, delay: 300 * time.Millisecond, payRate: 0.5, prefix: "t"}

	// First run: place the orders, then stop at once.
	ctx, cancel := context.WithCancel(context.Background())
	first := &syncbuf.Buffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, c, first) }()
	require.Eventually(t, func() bool { return strings.Contains(first.String(), "unpaid orders waiting") },
		10*time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	placed, paid := ids(placedRE, first.String()), ids(paidRE, first.String())
	require.Len(t, placed, 10)
	assert.Empty(t, ids(closedRE, first.String()), "nothing was due before the stop")

	// Second run: no new orders; the unpaid ones are closed when due.
	unpaid := len(placed) - len(paid)
	second := &syncbuf.Buffer{}
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	go func() { done <- run(ctx, config{db: db, delay: c.delay}, second) }()
	require.Eventually(t, func() bool { return len(ids(closedRE, second.String())) >= unpaid },
		10*time.Second, time.Millisecond, "output: %s", second.String())
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)

	closed := ids(closedRE, second.String())
	isPaid := map[string]bool{}
	for _, id := range paid {
		isPaid[id] = true
	}
	var wantClosed []string
	for _, id := range placed {
		if !isPaid[id] {
			wantClosed = append(wantClosed, id)
		}
	}
	assert.ElementsMatch(t, wantClosed, closed)
}
