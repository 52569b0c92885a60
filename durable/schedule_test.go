package durable

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// t0 is the mock clock's start in the tests of schedules.
var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// sharedQueues opens n queues over one BoltStore, as n processes sharing
// a store would be, on one mock clock set to t0.
func sharedQueues(t *testing.T, n int, opts ...Option) ([]*Queue, *BoltStore, *clock.Mock) {
	t.Helper()
	mock := clock.NewMock()
	mock.Set(t0)
	s, err := OpenBoltStore(filepath.Join(t.TempDir(), "queue.db"), WithClock(mock))
	require.NoError(t, err)
	qs := make([]*Queue, n)
	for i := range qs {
		qs[i], err = New(s, append([]Option{WithClock(mock), withClaimAhead(0)}, opts...)...)
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		for _, q := range qs {
			assert.NoError(t, q.Close())
		}
		assert.NoError(t, s.Close())
	})
	return qs, s, mock
}

// seriesLast waits until the series name's Last is want in s.
func seriesLast(t *testing.T, s store.SeriesKeeper, name string, want time.Time) {
	t.Helper()
	require.Eventually(t, func() bool {
		st, err := s.Series(context.Background(), name)
		return err == nil && st.Last.Equal(want)
	}, 5*time.Second, time.Millisecond, "series %q never reached Last %v", name, want)
}

// pendingIDs lists the IDs of the pending messages, by due time.
func pendingIDs(t *testing.T, q *Queue) []string {
	t.Helper()
	infos, _, err := q.List(context.Background(), Pending, "", 100)
	require.NoError(t, err)
	out := make([]string, len(infos))
	for i, info := range infos {
		out[i] = info.ID
	}
	return out
}

func TestScheduleOncePerTime(t *testing.T) {
	qs, s, mock := sharedQueues(t, 3)
	ctx := context.Background()
	const step = 100 * time.Millisecond
	for _, q := range qs {
		require.NoError(t, q.Schedule(ctx, "report", timingwheel.Every(step), []byte("report")))
	}
	// The first time is Next(now) at the first call, written at once;
	// the others joined it.
	seriesLast(t, s, "report", t0.Add(step))
	delivered := map[string]int{}
	late := (*Queue)(nil)
	for k := 1; k <= 30; k++ {
		tk := t0.Add(time.Duration(k) * step)
		// On time: the message of tk is in the store before tk.
		info, err := qs[0].Get(ctx, ScheduleID("report", tk))
		require.NoError(t, err)
		require.Equal(t, Pending, info.State)
		require.Equal(t, tk, info.Due.UTC())
		if k%5 == 0 {
			noneDue(t, qs[k%3]) // never before its time
		}
		mock.Set(tk)
		// The message of tk was in the store ahead; the next is written
		// when tk comes.
		seriesLast(t, s, "report", tk.Add(step))
		if k == 10 {
			// A process that comes late joins the series and enqueues
			// nothing again.
			late, err = New(s, WithClock(mock), withClaimAhead(0))
			require.NoError(t, err)
			defer func() { assert.NoError(t, late.Close()) }()
			require.NoError(t, late.Schedule(ctx, "report", timingwheel.Every(step), []byte("report")))
		}
		d := receive(t, qs[k%3])
		assert.Equal(t, ScheduleID("report", tk), d.ID)
		assert.Equal(t, tk, d.Due.UTC(), "due at its time")
		assert.Equal(t, "report", string(d.Payload))
		delivered[d.ID]++
		require.NoError(t, d.Ack(ctx))
	}
	require.Len(t, delivered, 30)
	for id, n := range delivered {
		assert.Equal(t, 1, n, "%s delivered once", id)
	}
	// Only the next time waits, once.
	assert.Equal(t, []string{ScheduleID("report", t0.Add(31*step))}, pendingIDs(t, qs[0]))
	infos, err := qs[1].Schedules(ctx)
	require.NoError(t, err)
	require.Equal(t, []ScheduleInfo{{Name: "report", Enqueued: t0.Add(31 * step), Last: t0.Add(31 * step), Next: t0.Add(32 * step)}}, utcInfos(infos))
}

func utcInfos(infos []ScheduleInfo) []ScheduleInfo {
	for i := range infos {
		infos[i].Enqueued, infos[i].Last, infos[i].Next = infos[i].Enqueued.UTC(), infos[i].Last.UTC(), infos[i].Next.UTC() //nolint:staticcheck // the deprecated copy too
	}
	return infos
}

func TestScheduleRestartEnqueuesTheLatestMissedTimeOnce(t *testing.T) {
	q, mock, path := testQueue(t)
	ctx := context.Background()
	every := timingwheel.Every(time.Minute)
	require.NoError(t, q.Schedule(ctx, "sweep", every, nil))
	require.Equal(t, []string{ScheduleID("sweep", t0.Add(time.Minute))}, pendingIDs(t, q))
	require.NoError(t, q.Close())

	// Ten minutes with no process of the series.
	mock.Add(10 * time.Minute)
	q2, err := Open(path, WithClock(mock), withClaimAhead(0))
	require.NoError(t, err)
	defer func() { assert.NoError(t, q2.Close()) }()
	require.NoError(t, q2.Schedule(ctx, "sweep", every, nil))
	seriesLast(t, q2.keeper, "sweep", t0.Add(11*time.Minute))
	assert.Equal(t, []string{
		ScheduleID("sweep", t0.Add(time.Minute)),    // written ahead before the downtime
		ScheduleID("sweep", t0.Add(10*time.Minute)), // the latest time missed, once
		ScheduleID("sweep", t0.Add(11*time.Minute)), // and on from the next
	}, pendingIDs(t, q2))
}

func TestScheduleChange(t *testing.T) {
	q, mock, _ := testQueue(t)
	ctx := context.Background()
	require.NoError(t, q.Schedule(ctx, "s", timingwheel.Every(time.Minute), nil))
	require.Equal(t, []string{ScheduleID("s", t0.Add(time.Minute))}, pendingIDs(t, q))

	// Every 90s from now: the pending time (1m) is not one of them, and
	// is cancelled.
	require.NoError(t, q.Schedule(ctx, "s", timingwheel.Every(90*time.Second), nil))
	assert.Equal(t, []string{ScheduleID("s", t0.Add(90*time.Second))}, pendingIDs(t, q))
	st, err := q.keeper.Series(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, t0.Add(180*time.Second), st.Next.UTC())

	// A cron of every minute does not have 12:01:30 either: from the next
	// time on, the series is at whole minutes.
	minutely, err := Cron("* * * * *")
	require.NoError(t, err)
	require.NoError(t, q.Schedule(ctx, "s", minutely, nil))
	assert.Equal(t, []string{ScheduleID("s", t0.Add(time.Minute))}, pendingIDs(t, q))

	// A schedule that has the pending time keeps it, with the new payload.
	everyMinuteAgain, err := Cron("CRON_TZ=UTC */1 * * * *")
	require.NoError(t, err)
	require.NoError(t, q.Schedule(ctx, "s", everyMinuteAgain, []byte("v2")))
	assert.Equal(t, []string{ScheduleID("s", t0.Add(time.Minute))}, pendingIDs(t, q))
	info, err := q.Get(ctx, ScheduleID("s", t0.Add(time.Minute)))
	require.NoError(t, err)
	assert.Equal(t, "v2", string(info.Payload))

	// The series goes on at the new times.
	mock.Set(t0.Add(time.Minute))
	seriesLast(t, q.keeper, "s", t0.Add(2*time.Minute))
}

// conflicts is an Observer that keeps the schedule conflicts it hears.
type conflicts chan Event

func (c conflicts) Observe(e Event) {
	if e.Kind == EventScheduleConflict {
		c <- e
	}
}

func TestScheduleConflictTheLatestCallWins(t *testing.T) {
	heard := make(conflicts, 10)
	qs, s, mock := sharedQueues(t, 1, WithObserver(heard))
	ctx := context.Background()
	newer, err := New(s, WithClock(mock), withClaimAhead(0))
	require.NoError(t, err)
	defer func() { assert.NoError(t, newer.Close()) }()

	require.NoError(t, qs[0].Schedule(ctx, "s", timingwheel.Every(time.Minute), nil))
	// A process deployed with another schedule calls later: it wins.
	require.NoError(t, newer.Schedule(ctx, "s", timingwheel.Every(2*time.Minute), nil))
	assert.Equal(t, []string{ScheduleID("s", t0.Add(2*time.Minute))}, pendingIDs(t, newer))

	// The old one sees the conflict at its next step, and stops taking
	// part; the series goes on at the new times.
	mock.Set(t0.Add(2 * time.Minute))
	select {
	case e := <-heard:
		assert.ErrorIs(t, e.Err, ErrScheduleConflict)
		assert.Equal(t, "s", e.ID)
	case <-time.After(5 * time.Second):
		t.Fatal("no conflict reported")
	}
	seriesLast(t, s, "s", t0.Add(4*time.Minute))
	qs[0].mu.Lock()
	assert.Empty(t, qs[0].series)
	qs[0].mu.Unlock()
}

func TestUnschedule(t *testing.T) {
	qs, s, mock := sharedQueues(t, 2)
	ctx := context.Background()
	for _, q := range qs {
		require.NoError(t, q.Schedule(ctx, "s", timingwheel.Every(time.Minute), nil))
	}
	found, err := qs[0].Unschedule(ctx, "s")
	require.NoError(t, err)
	assert.True(t, found)
	assert.Empty(t, pendingIDs(t, qs[0]), "the pending time is cancelled")
	infos, err := qs[1].Schedules(ctx)
	require.NoError(t, err)
	assert.Empty(t, infos)

	// The other process stops too: its timer finds no series.
	mock.Set(t0.Add(time.Minute))
	require.Eventually(t, func() bool {
		qs[1].mu.Lock()
		defer qs[1].mu.Unlock()
		return len(qs[1].series) == 0
	}, 5*time.Second, time.Millisecond)
	assert.Empty(t, pendingIDs(t, qs[1]))
	_, err = s.Series(ctx, "s")
	assert.ErrorIs(t, err, ErrNotFound)

	found, err = qs[1].Unschedule(ctx, "s")
	require.NoError(t, err)
	assert.False(t, found)
}

// stuck is a Schedule whose Next does not move forward.
type stuck struct{}

func (stuck) Next(t time.Time) time.Time { return t }

// never is a Schedule with no time.
type never struct{}

func (never) Next(time.Time) time.Time { return time.Time{} }

func TestScheduleBadInputWritesNothing(t *testing.T) {
	q, _, _ := testQueue(t)
	ctx := context.Background()
	every := timingwheel.Every(time.Minute)
	for name, call := range map[string]func() error{
		"empty name":   func() error { return q.Schedule(ctx, "", every, nil) },
		"long name":    func() error { return q.Schedule(ctx, strings.Repeat("n", MaxScheduleNameLen+1), every, nil) },
		"name with @":  func() error { return q.Schedule(ctx, "a@b", every, nil) },
		"nil schedule": func() error { return q.Schedule(ctx, "s", nil, nil) },
		"stuck":        func() error { return q.Schedule(ctx, "s", stuck{}, nil) },
		"no time":      func() error { return q.Schedule(ctx, "s", never{}, nil) },
		"big payload":  func() error { return q.Schedule(ctx, "s", every, make([]byte, MaxPayloadLen+1)) },
		"bad spec": func() error {
			_, err := Cron("61 * * * *")
			return err
		},
		"six fields": func() error {
			_, err := Cron("0 0 2 * * *")
			return err
		},
		"bad zone": func() error {
			_, err := Cron("CRON_TZ=Nowhere/Nothing 0 2 * * *")
			return err
		},
	} {
		err := call()
		require.ErrorIs(t, err, ErrInvalidSchedule, name)
	}
	infos, err := q.Schedules(ctx)
	require.NoError(t, err)
	assert.Empty(t, infos)
	assert.Empty(t, pendingIDs(t, q))
}

func TestCron(t *testing.T) {
	at := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for spec, want := range map[string]time.Time{
		"0 2 * * *":                    time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC),
		"@hourly":                      at.Add(time.Hour),
		"@daily":                       time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC),
		"@every 5m":                    at.Add(5 * time.Minute),
		"CRON_TZ=Asia/Tokyo 0 2 * * *": time.Date(2026, 11, 22, 17, 0, 0, 0, time.UTC), // 02:00 in Tokyo
	} {
		s, err := Cron(spec)
		require.NoError(t, err, spec)
		assert.True(t, want.Equal(s.Next(at)), "%s: %v, want %v", spec, s.Next(at), want)
	}
}

func TestScheduleFingerprint(t *testing.T) {
	a, err := Cron("0 2 * * *")
	require.NoError(t, err)
	b, err := Cron("CRON_TZ=UTC 0 2 * * *")
	require.NoError(t, err)
	c, err := Cron("0 3 * * *")
	require.NoError(t, err)
	fa, err := fingerprint(a, nil)
	require.NoError(t, err)
	fb, err := fingerprint(b, nil)
	require.NoError(t, err)
	fc, err := fingerprint(c, nil)
	require.NoError(t, err)
	fp, err := fingerprint(a, []byte("x"))
	require.NoError(t, err)
	assert.Equal(t, fa, fb, "equal specs")
	assert.NotEqual(t, fa, fc)
	assert.NotEqual(t, fa, fp, "the payload counts")
	// Every(24h) is not the cron of 00:00 from the reference instant on.
	fe, err := fingerprint(timingwheel.Every(24*time.Hour), nil)
	require.NoError(t, err)
	fd, err := fingerprint(mustCron(t, "@daily"), nil)
	require.NoError(t, err)
	assert.Equal(t, fe, fd, "the same times, whatever the type")
}

func mustCron(t *testing.T, spec string) Schedule {
	s, err := Cron(spec)
	require.NoError(t, err)
	return s
}

func TestCloseStopsTheSeriesTimers(t *testing.T) {
	qs, s, mock := sharedQueues(t, 1)
	ctx := context.Background()
	require.NoError(t, qs[0].Schedule(ctx, "s", timingwheel.Every(time.Minute), nil))
	require.NoError(t, qs[0].Close())
	mock.Set(t0.Add(5 * time.Minute))
	st, err := s.Series(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, t0.Add(time.Minute), st.Last.UTC(), "no step after Close")
	assert.ErrorIs(t, qs[0].Schedule(ctx, "t", timingwheel.Every(time.Minute), nil), ErrClosed)
}

// TestCronRefusesWhatItCannotKeep: each refusal wraps ErrInvalidSchedule
// and names the spec; none mentions a base date the user never gave.
func TestCronRefusesWhatItCannotKeep(t *testing.T) {
	for spec, why := range map[string]string{
		"0 0 30 2 *":                      "never fires",
		"0 0 31 4 *":                      "never fires",
		"CRON_TZ=Europe/Paris 0 0 30 2 *": "never fires",
		"@every 0s":                       "under 1s",
		"@every -1s":                      "under 1s",
		"@every 500ms":                    "under 1s",
		"@every 1500ms":                   "not a whole number of seconds",
		"@every 1m0.5s":                   "not a whole number of seconds",
		"@every soon":                     "invalid duration",
	} {
		s, err := Cron(spec)
		require.ErrorIs(t, err, ErrInvalidSchedule, spec)
		assert.Nil(t, s, spec)
		assert.Contains(t, err.Error(), strconv.Quote(spec), "the error names the spec")
		assert.Contains(t, err.Error(), why, spec)
		assert.NotContains(t, err.Error(), "2000", spec)
	}
}

// TestCronEveryIsExact: a whole number of seconds, 1s or more, is kept
// exactly.
func TestCronEveryIsExact(t *testing.T) {
	at := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for spec, d := range map[string]time.Duration{
		"@every 1s":    time.Second,
		"@every 90s":   90 * time.Second,
		"@every 1m30s": 90 * time.Second,
		" @every 2h ":  2 * time.Hour,
	} {
		s, err := Cron(spec)
		require.NoError(t, err, spec)
		got := s.Next(at)
		assert.True(t, at.Add(d).Equal(got), "%s: %v", spec, got)
		assert.True(t, at.Add(2*d).Equal(s.Next(got)), spec)
	}
}

// TestScheduleWithoutTimeNamesNoBaseDate: a Schedule with no time is
// refused without mentioning the instant fingerprint reads from.
func TestScheduleWithoutTimeNamesNoBaseDate(t *testing.T) {
	q, _, _ := testQueue(t)
	err := q.Schedule(context.Background(), "s", never{}, nil)
	require.ErrorIs(t, err, ErrInvalidSchedule)
	assert.NotContains(t, err.Error(), "2000")
}

// TestSchedulesEnqueued: Schedules' Enqueued is the time whose message is
// written and pending, in the future; Last is a copy.
func TestSchedulesEnqueued(t *testing.T) {
	q, _, _ := testQueue(t)
	ctx := context.Background()
	require.NoError(t, q.Schedule(ctx, "s", timingwheel.Every(time.Minute), nil))
	infos, err := q.Schedules(ctx)
	require.NoError(t, err)
	require.Len(t, infos, 1)
	assert.True(t, infos[0].Enqueued.Equal(t0.Add(time.Minute)), "%v", infos[0].Enqueued)
	assert.Equal(t, infos[0].Enqueued, infos[0].Last) //nolint:staticcheck // the deprecated copy
	assert.Equal(t, []string{ScheduleID("s", t0.Add(time.Minute))}, pendingIDs(t, q))
}
