package redisstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel"
	"github.com/seed64e23a5c/timingwheel/durable"
)

// The series of the multi-process test of schedules: every 100ms, run by
// each scheduler process for childCountEnv milliseconds.
const (
	childSeries     = "report"
	childSeriesStep = 100 * time.Millisecond
)

// runScheduler takes part in the series and receives its messages until
// its time is up, logging "D id due-ns received-ns" for each delivery,
// which it acks.
func runScheduler() error {
	ms, err := strconv.Atoi(os.Getenv(childCountEnv))
	if err != nil {
		return err
	}
	log, err := os.Create(os.Getenv(childLogEnv))
	if err != nil {
		return err
	}
	defer log.Close()
	return withChildQueue(nil, func(q *durable.Queue) error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(ms)*time.Millisecond)
		defer cancel()
		if err := q.Schedule(ctx, childSeries, timingwheel.Every(childSeriesStep), []byte("report")); err != nil {
			return err
		}
		for {
			d, err := q.Receive(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			recv := time.Now()
			if err := d.Ack(context.Background()); err != nil {
				return err
			}
			if _, err := fmt.Fprintf(log, "D %s %d %d\n", d.ID, d.Due.UnixNano(), recv.UnixNano()); err != nil {
				return err
			}
		}
	})
}

// TestScheduleMultiProcess runs three processes that take part in one
// series every 100ms for 3s, and checks their logs: every time of the
// series from the first to the last delivered, each exactly once, none
// before its time.
func TestScheduleMultiProcess(t *testing.T) {
	srv := startRedis(t)
	c := srv.client(t)
	s := openStore(t, c, childQueue)
	dir := t.TempDir()
	var logs []string
	var children []*child
	for i := range 3 {
		log := filepath.Join(dir, fmt.Sprintf("scheduler%d.log", i))
		logs = append(logs, log)
		children = append(children, startChild(t, "scheduler", srv.addr(), 3000, time.Now(), log))
	}
	for i, ch := range children {
		ch.wait(t, time.Minute, fmt.Sprintf("scheduler %d", i))
	}

	seen := map[string]int{}
	var dues []time.Time
	for _, path := range logs {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		for line := range strings.Lines(string(b)) {
			f := strings.Fields(line)
			require.Len(t, f, 4, line)
			due, err := strconv.ParseInt(f[2], 10, 64)
			require.NoError(t, err)
			recv, err := strconv.ParseInt(f[3], 10, 64)
			require.NoError(t, err)
			assert.Equal(t, durable.ScheduleID(childSeries, time.Unix(0, due)), f[1])
			assert.GreaterOrEqual(t, recv, due, "%s delivered before its time", f[1])
			seen[f[1]]++
			if seen[f[1]] == 1 {
				dues = append(dues, time.Unix(0, due))
			}
		}
	}
	for id, n := range seen {
		assert.Equal(t, 1, n, "%s delivered %d times", id, n)
	}
	// Three seconds of a series every 100ms, less the start and end of
	// the processes.
	require.GreaterOrEqual(t, len(dues), 20)
	slices.SortFunc(dues, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(dues); i++ {
		assert.Equal(t, childSeriesStep, dues[i].Sub(dues[i-1]), "no time missing after %v", dues[i-1])
	}
	// The store holds the series, its next time written ahead.
	sr, err := s.Series(context.Background(), childSeries)
	require.NoError(t, err)
	assert.True(t, sr.Last.After(dues[len(dues)-1]))
	t.Logf("%d times delivered once each by 3 processes", len(dues))
}
