package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// A backend is a seeded queue that the tests of every command run on: a
// file, or a queue on Redis.
type backend struct {
	queue string                                     // the <queue> argument
	soon  time.Time                                  // p1's due time
	store func(t *testing.T) (durable.Store, func()) // opens the queue to look at it
	// state reads what a read-only command must not change, and stateIs
	// says what that is (see unchanged).
	state   func(t *testing.T) any
	stateIs string
}

// unchanged returns a check that nothing has been written since it was
// called: b's state is as it was.
func (b backend) unchanged(t *testing.T) func() {
	before := b.state(t)
	return func() {
		t.Helper()
		require.Equal(t, before, b.state(t), b.stateIs)
	}
}

// forEachBackend runs f on a freshly seeded file, on a freshly seeded
// queue on a redis-server of its own, and on a freshly seeded queue of its
// own on the tests' PostgreSQL and on their MariaDB.
func forEachBackend(t *testing.T, f func(t *testing.T, b *backend)) {
	t.Run("file", func(t *testing.T) { f(t, newFileBackend(t)) })
	t.Run("redis", func(t *testing.T) { f(t, newRedisBackend(t, startRedis(t), "orders")) })
	t.Run("postgres", func(t *testing.T) { f(t, newPostgresBackend(t)) })
	t.Run("mysql", func(t *testing.T) { f(t, newMySQLBackend(t)) })
}

func TestStats(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		r := twq(t, b.queue, "stats").ok(t)
		assert.Regexp(t, `(?m)^pending\s+2$`, r.stdout)
		assert.Regexp(t, `(?m)^in-flight\s+1$`, r.stdout)
		assert.Regexp(t, `(?m)^dead\s+1$`, r.stdout)
		assert.Regexp(t, `(?m)^next due\s+`+b.soon.Local().Format(time.RFC3339)+` \(in (1h0m0s|59m\d+s)\)$`, r.stdout)

		var st statsJSON
		twq(t, "-json", b.queue, "stats").ok(t).decode(t, &st)
		assert.Equal(t, 2, st.Pending)
		assert.Equal(t, 1, st.InFlight)
		assert.Equal(t, 1, st.Dead)
		assert.True(t, st.NextDue.Equal(b.soon), "%v", st.NextDue)
	})
}

func TestDead(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		before := time.Now()
		r := twq(t, b.queue, "dead").ok(t)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		require.Len(t, lines, 2, r.stdout)
		assert.Regexp(t, `^ID\s+DIED\s+PAYLOAD$`, lines[0])
		assert.Regexp(t, `^"d1"\s+\S+ \((now|\d+s ago)\)\s+"dead one"$`, lines[1])

		var dead []deadJSON
		twq(t, b.queue, "dead", "-json", "-limit", "5").ok(t).decode(t, &dead)
		require.Len(t, dead, 1)
		assert.Equal(t, "d1", dead[0].ID)
		require.NotNil(t, dead[0].Payload)
		assert.Equal(t, "dead one", *dead[0].Payload)
		assert.Nil(t, dead[0].PayloadBase64)
		assert.WithinDuration(t, before, dead[0].DiedAt, time.Minute)
	})
}

func TestDeadEmpty(t *testing.T) {
	b := newFileBackend(t)
	twq(t, b.queue, "requeue", "d1").ok(t)
	assert.Equal(t, "no dead letters\n", twq(t, b.queue, "dead").ok(t).stdout)
	assert.Equal(t, "[]\n", twq(t, "-json", b.queue, "dead").ok(t).stdout)
}

func TestRequeue(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		at := time.Now().Add(3 * time.Hour).Truncate(time.Second)
		r := twq(t, b.queue, "requeue", "d1", "-at", at.Format(time.RFC3339)).ok(t)
		assert.Contains(t, r.stdout, `requeued "d1", due `+at.Local().Format(time.RFC3339))
		st := b.stats(t)
		assert.Equal(t, durable.Stats{Pending: 3, InFlight: 1, Dead: 0, NextDue: b.soon}, st)

		twq(t, b.queue, "requeue", "d1").failed(t, exitError, `there is no dead message "d1"`)
		twq(t, b.queue, "requeue", "p1").failed(t, exitError, `there is no dead message "p1"`)
	})
}

func TestRequeueNowAndJSON(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		var d doneJSON
		twq(t, "-json", b.queue, "requeue", "d1").ok(t).decode(t, &d)
		assert.Equal(t, doneJSON{Action: "requeue", ID: "d1"}, d, "no due: due now")
		st := b.stats(t)
		assert.Equal(t, 3, st.Pending)
		assert.WithinDuration(t, time.Now(), st.NextDue, time.Minute, "due now, before p1")
	})
}

func TestCancel(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		assert.Equal(t, "cancelled \"p1\"\n", twq(t, b.queue, "cancel", "p1").ok(t).stdout)
		var d doneJSON
		twq(t, b.queue, "cancel", "d1", "-json").ok(t).decode(t, &d)
		assert.Equal(t, doneJSON{Action: "cancel", ID: "d1"}, d)

		twq(t, b.queue, "cancel", "f1").failed(t, exitError, `"f1" is in flight`)
		twq(t, b.queue, "cancel", "p1").failed(t, exitError, `there is no message "p1"`)
		st := b.stats(t)
		assert.Equal(t, durable.Stats{Pending: 1, InFlight: 1, Dead: 0, NextDue: b.soon.Add(time.Hour)}, st)
	})
}

func TestEnqueue(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		before := time.Now()
		r := twq(t, b.queue, "enqueue", "n1", "-payload", "from an operator", "-in", "30m").ok(t)
		assert.Regexp(t, `^enqueued "n1" \(16 bytes\), due \S+ \(in (30m0s|29m5\ds)\)\n$`, r.stdout)

		file := filepath.Join(t.TempDir(), "payload")
		require.NoError(t, os.WriteFile(file, binaryPayload, 0o600))
		var d doneJSON
		twq(t, "-json", b.queue, "enqueue", "-payload-file", file, "n2").ok(t).decode(t, &d)
		assert.Equal(t, doneJSON{Action: "enqueue", ID: "n2", PayloadBytes: len(binaryPayload)}, d)

		at := time.Now().Add(5 * time.Hour).Truncate(time.Second)
		twqStdin(t, strings.NewReader("from stdin"), b.queue, "enqueue", "n3",
			"-payload-file", "-", "-at", at.Format(time.RFC3339)).ok(t)

		st := b.stats(t)
		assert.Equal(t, 5, st.Pending)
		assert.WithinDuration(t, time.Now(), st.NextDue, time.Minute, "n2 is due now")

		// What each holds, seen through the store: cancel them in turn and
		// watch the next due time move.
		s, closeStore := b.store(t)
		defer closeStore()
		ctx := context.Background()
		found, err := s.Cancel(ctx, "n2")
		require.NoError(t, err)
		require.True(t, found)
		st, err = s.Stats(ctx)
		require.NoError(t, err)
		assert.WithinDuration(t, before.Add(30*time.Minute), st.NextDue, time.Minute, "n1 is due in 30m")
		assert.True(t, st.NextDue.After(before.Add(30*time.Minute)))
		for _, id := range []string{"n1", "p1", "p2"} {
			found, err := s.Cancel(ctx, id)
			require.NoError(t, err)
			require.True(t, found)
		}
		st, err = s.Stats(ctx)
		require.NoError(t, err)
		assert.True(t, st.NextDue.Equal(at), "n3 is due at -at: %v", st.NextDue)
		// n3's payload came from stdin: claim it to read it back.
		c, err := s.Claim(ctx, store.ClaimParams{Limit: 1, Lease: time.Minute, Ahead: 6 * time.Hour})
		require.NoError(t, err)
		require.Len(t, c.Leases, 1)
		assert.Equal(t, "n3", c.Leases[0].ID)
		assert.Equal(t, "from stdin", string(c.Leases[0].Payload))
	})
}

func TestEnqueueRejectsInvalidMessages(t *testing.T) {
	b := newFileBackend(t)
	check := b.unchanged(t)
	big := filepath.Join(t.TempDir(), "big")
	require.NoError(t, os.WriteFile(big, make([]byte, durable.MaxPayloadLen+1), 0o600))
	twq(t, b.queue, "enqueue", "x", "-payload-file", big).failed(t, exitError, "invalid message", "MaxPayloadLen")
	twq(t, b.queue, "enqueue", strings.Repeat("i", durable.MaxIDLen+1)).failed(t, exitError, "invalid message", "MaxIDLen")
	twq(t, b.queue, "enqueue", "x", "-payload-file", filepath.Join(t.TempDir(), "none")).failed(t, exitError, "reading the payload")
	check()
}

// TestReadOnlyCommandsWriteNothing runs every read-only command, with and
// without -json, and checks that the file is byte for byte as it was,
// with the same modification time, and that Redis counted no change.
func TestReadOnlyCommandsWriteNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		check := b.unchanged(t)
		for _, args := range [][]string{{"stats"}, {"dead"}, {"dead", "-limit", "1"}, {"get", "p1"},
			{"list", "pending"}, {"list", "in-flight"}, {"list", "dead", "-limit", "1"}} {
			twq(t, append([]string{b.queue}, args...)...).ok(t)
			twq(t, append([]string{"-json", b.queue}, args...)...).ok(t)
		}
		check()
	})
}

// TestIDsThatLookLikeFlags: "--" ends the flags.
func TestIDsThatLookLikeFlags(t *testing.T) {
	b := newFileBackend(t)
	twq(t, b.queue, "enqueue", "-payload", "p", "--", "-odd").ok(t)
	r := twq(t, b.queue, "cancel", "--", "-odd").ok(t)
	assert.Equal(t, "cancelled \"-odd\"\n", r.stdout)
}

func TestSchedules(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		r := twq(t, b.queue, "schedules").ok(t)
		assert.Equal(t, "NAME  ENQUEUED  NEXT", strings.TrimSpace(r.stdout), "no series yet")

		s, closeStore := b.store(t)
		q, err := durable.New(s)
		require.NoError(t, err)
		daily, err := durable.Cron("0 2 * * *")
		require.NoError(t, err)
		require.NoError(t, q.Schedule(context.Background(), "close-unpaid", daily, nil))
		require.NoError(t, q.Close())
		closeStore()
		last := daily.Next(time.Now())

		check := b.unchanged(t)
		r = twq(t, b.queue, "schedules").ok(t)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		require.Len(t, lines, 2, r.stdout)
		assert.Regexp(t, `^NAME\s+ENQUEUED\s+NEXT$`, lines[0])
		assert.Regexp(t, `^"close-unpaid"\s+`+last.Local().Format(time.RFC3339)+` \(in \S+\)\s+`+
			daily.Next(last).Local().Format(time.RFC3339)+` \(in \S+\)$`, lines[1])

		var got []scheduleJSON
		twq(t, "-json", b.queue, "schedules").ok(t).decode(t, &got)
		require.Len(t, got, 1)
		assert.Equal(t, "close-unpaid", got[0].Name)
		assert.True(t, got[0].Enqueued.Equal(last), "%v", got[0].Enqueued)
		assert.True(t, got[0].Last.Equal(last), "the old name: %v", got[0].Last)
		assert.True(t, got[0].Next.Equal(daily.Next(last)), "%v", got[0].Next)
		check()
	})
}
