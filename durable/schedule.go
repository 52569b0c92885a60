package durable

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/seed64e23a5c/timingwheel"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// Durable schedules (Queue.Schedule): a series of messages, one for each
// time of a Schedule, kept in the store and shared by every process that
// takes part in it.
//
// The store keeps each series' state (Series): the last time whose
// message was written, Last, and the time after it, Next. A process that
// takes part arms one wheel timer for Last: when Last comes due, it
// writes the message of Next, due at Next, and moves the state from Last
// to Next, in one compare-and-set (Store.AdvanceSeries) that holds only
// if the state is still the one it read. So each time's message is
// written once in all, by whichever process steps first, and one interval
// ahead of its time; the others find the state moved on and arm their
// timers for the new Last.

// ErrInvalidSchedule is wrapped by the errors of Cron and Queue.Schedule
// for a name, spec or Schedule they cannot use; nothing is written.
var ErrInvalidSchedule = errors.New("durable: invalid schedule")

// ErrScheduleConflict is the error a process sees (on its Observer, as
// EventScheduleConflict, and in its log) when the series it takes part in
// was rewritten by a Schedule call with another Schedule or payload, in
// this process or another: the latest Schedule call wins, and a process
// whose Schedule differs stops taking part in the series.
var ErrScheduleConflict = errors.New("durable: the series runs another schedule")

// MaxScheduleNameLen is the longest name of a series, in bytes: its
// messages' IDs are the name, "@" and a time.
const MaxScheduleNameLen = 200

// A Schedule gives the times of a series: Next(t) is the first time of
// the series after t, or the zero time if there is none (the series
// ends). timingwheel.Every(d) and github.com/robfig/cron/v3 schedules
// satisfy it.
type Schedule interface{ Next(t time.Time) time.Time }

var _ Schedule = timingwheel.Every(time.Second)

// Cron parses a standard 5-field cron spec ("0 2 * * *": minute, hour,
// day of month, month, day of week) or a descriptor (@hourly, @daily,
// @every 5m), in UTC unless it starts with CRON_TZ=<zone> (or TZ=<zone>).
//
// It refuses, with an error wrapping ErrInvalidSchedule that names the
// spec, what it cannot keep: a spec that does not parse; "@every d" with
// d under 1s or not a whole number of seconds (a cron ticks in whole
// seconds: "@every 1500ms" would run every 1s or 2s, never every 1.5s, so
// it is refused rather than rounded; "@every 90s" and "@every 1m30s" are
// kept exactly); and a spec that never fires ("0 0 30 2 *", February 30th),
// found by asking for its next time after now. For an interval under a
// second, or not whole, use timingwheel.Every(d), which Schedule keeps to
// the nanosecond.
func Cron(spec string) (Schedule, error) {
	s := strings.TrimSpace(spec)
	if err := checkEvery(s); err != nil {
		return nil, fmt.Errorf("%w: cron spec %q: %v", ErrInvalidSchedule, spec, err)
	}
	if !strings.HasPrefix(s, "CRON_TZ=") && !strings.HasPrefix(s, "TZ=") {
		s = "CRON_TZ=UTC " + s
	}
	sched, err := cron.ParseStandard(s)
	if err != nil {
		return nil, fmt.Errorf("%w: cron spec %q: %v", ErrInvalidSchedule, spec, err)
	}
	// A cron schedule gives the zero time when it finds no time in the
	// five years after the one it is asked about: the spec names a date
	// that does not exist.
	if sched.Next(time.Now()).IsZero() {
		return nil, fmt.Errorf("%w: cron spec %q never fires", ErrInvalidSchedule, spec)
	}
	return sched, nil
}

// checkEvery checks the interval of an "@every d" spec (s, trimmed; a
// time zone prefix does not apply to it): d must be a whole number of
// seconds, 1s or more.
func checkEvery(s string) error {
	rest, ok := strings.CutPrefix(s, "@every ")
	if !ok {
		return nil // not @every: the parser checks it
	}
	d, err := time.ParseDuration(strings.TrimSpace(rest))
	switch {
	case err != nil:
		return err
	case d < time.Second:
		return fmt.Errorf("@every %v is under 1s (use timingwheel.Every for shorter intervals)", d)
	case d%time.Second != 0:
		return fmt.Errorf("@every %v is not a whole number of seconds (use timingwheel.Every for it)", d)
	}
	return nil
}

// ScheduleInfo is what Queue.Schedules tells of a series.
type ScheduleInfo struct {
	Name string
	// Enqueued is the latest time of the series whose message was
	// enqueued (zero: none yet). A series writes each time's message one
	// interval ahead (see Queue.Schedule), so Enqueued is usually in the
	// future: the message of that time is pending, not delivered yet.
	Enqueued time.Time
	// Last is Enqueued, under its old name.
	//
	// Deprecated: use Enqueued; Last is not the last time that ran.
	Last time.Time
	// Next is the time of the series after Enqueued, whose message is
	// written when Enqueued comes due.
	Next time.Time
}

// ScheduleID is the ID of the message of the series name for its time t:
// name, "@" and t in UTC as RFC 3339 with nanoseconds (time.RFC3339Nano).
func ScheduleID(name string, t time.Time) string {
	return name + "@" + t.UTC().Format(time.RFC3339Nano)
}

// fingerprintBase is the instant after which fingerprint reads the first
// times of a Schedule, and fingerprintTimes how many it reads.
var fingerprintBase = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

const fingerprintTimes = 8

// fingerprint identifies a series' Schedule and payload: a hash of the
// payload and of the first times of s after fingerprintBase, equal for
// equal specs, whatever Schedule type gives them. It fails, wrapping
// ErrInvalidSchedule, if s has no time or one that does not move forward.
func fingerprint(s Schedule, payload []byte) (string, error) {
	h := sha256.New()
	var buf [8]byte
	t := fingerprintBase
	for i := range fingerprintTimes {
		n, err := nextTime(s, t)
		if err != nil {
			return "", err
		}
		if n.IsZero() {
			if i == 0 {
				return "", fmt.Errorf("%w: the schedule has no time (its Next gave the zero time)", ErrInvalidSchedule)
			}
			break
		}
		binary.BigEndian.PutUint64(buf[:], uint64(n.UnixNano()))
		h.Write(buf[:])
		t = n
	}
	h.Write(payload)
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// nextTime is s.Next(t), checked: the zero time (the series ends) or a
// time after t; a panic of s comes back as an error.
func nextTime(s Schedule, t time.Time) (n time.Time, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: Next panicked: %v", ErrInvalidSchedule, r)
		}
	}()
	n = s.Next(t)
	if !n.IsZero() && !n.After(t) {
		return time.Time{}, fmt.Errorf("%w: Next(%v) is %v, not after it", ErrInvalidSchedule, t, n)
	}
	return n, nil
}

// checkScheduleName reports whether name can name a series.
func checkScheduleName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty name", ErrInvalidSchedule)
	case len(name) > MaxScheduleNameLen:
		return fmt.Errorf("%w: name is %d bytes, more than MaxScheduleNameLen (%d)", ErrInvalidSchedule, len(name), MaxScheduleNameLen)
	case strings.Contains(name, "@"):
		return fmt.Errorf("%w: name %q contains @", ErrInvalidSchedule, name)
	}
	return nil
}

// A seriesRun is this queue's part in a series: its Schedule, and the
// wheel timer that fires when the series' Last comes due.
type seriesRun struct {
	name    string
	sched   Schedule
	fp      string
	payload []byte
	timer   *timingwheel.Timer

	mu      sync.Mutex // one step at a time
	stopped bool       // under q.mu: replaced, unscheduled or closed
}

// Schedule makes the queue hold, for every time t of s, one message with
// ID name+"@"+t in UTC as RFC 3339 with nanoseconds (time.RFC3339Nano,
// see ScheduleID), the given payload, and Due t. Every process that
// shares the store and calls Schedule with the same name takes part in
// one series: each time's message is enqueued once in all, whatever the
// number of processes, their clocks and their restarts.
//
// The guarantees:
//   - Once per time: the series' state (the last time enqueued) is in the
//     store, and the step from one time to the next is one atomic
//     compare-and-set there, which writes the next time's message. A
//     process that comes late finds the state moved on: a message that
//     was delivered and acked is not enqueued again.
//   - On time: the message of a time is written when the time before it
//     comes due, one interval ahead, and is delivered at its time as any
//     message is. The first time of a new series is s.Next(now) at the
//     first Schedule call, on the queue's clock (WithClock); the
//     processes that call later join that series.
//   - Restarts: times that passed while no process of the series ran are
//     not all replayed. The latest of them is enqueued once, due at once,
//     and the series goes on from the next time (as cron's "run once
//     after downtime", or a time.Ticker's dropped ticks). The message
//     written ahead before the downtime is in the store and is delivered
//     too.
//   - Changing a schedule: calling Schedule again with the same name and
//     another Schedule (or payload) moves the series to the new times
//     from the next one on; the pending message of a time the new
//     Schedule does not have is cancelled. The latest Schedule call wins:
//     a process that runs another Schedule under the same name (deploy
//     skew) sees ErrScheduleConflict at its next step, on its Observer
//     (EventScheduleConflict) and in its log, and stops taking part.
//
// A name must be 1 to MaxScheduleNameLen bytes without "@"; s must have a
// time after now, each after the one before. Otherwise, and for a payload
// over MaxPayloadLen, the error wraps ErrInvalidSchedule and nothing is
// written. A store that cannot keep series as configured (Redis Cluster
// with several shards) gives an error wrapping ErrSeriesUnsupported. The
// queue takes part in the series until Unschedule, Close, or a conflict;
// the series lives on in the store until Unschedule.
func (q *Queue) Schedule(ctx context.Context, name string, s Schedule, payload []byte) error {
	if err := q.keepsSeries(); err != nil {
		return err
	}
	if err := checkScheduleName(name); err != nil {
		return err
	}
	if s == nil {
		return fmt.Errorf("%w: nil Schedule", ErrInvalidSchedule)
	}
	if len(payload) > MaxPayloadLen {
		return fmt.Errorf("%w: payload is %d bytes, more than MaxPayloadLen (%d)", ErrInvalidSchedule, len(payload), MaxPayloadLen)
	}
	fp, err := fingerprint(s, payload)
	if err != nil {
		return err
	}
	now := q.clock.Now()
	first, err := nextTime(s, now)
	if err != nil {
		return err
	}
	if first.IsZero() {
		return fmt.Errorf("%w: the schedule has no time after now (%v)", ErrInvalidSchedule, now)
	}
	r := &seriesRun{name: name, sched: s, fp: fp, payload: payload}
	var st store.Series
	err = q.call(func() (err error) {
		st, err = q.joinSeries(ctx, r, now, first)
		return err
	})
	if err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	if old := q.series[name]; old != nil {
		old.stopLocked()
	}
	q.series[name] = r
	r.timer = q.wheel.AfterFunc(math.MaxInt64, func() { q.fireSeries(r) })
	r.timer.ResetAt(st.Last)
	return nil
}

// joinSeries creates the series of r, joins it if it runs r's Schedule,
// or rewrites it to r's Schedule, and returns its state.
func (q *Queue) joinSeries(ctx context.Context, r *seriesRun, now, first time.Time) (store.Series, error) {
	st, err := q.keeper.Series(ctx, r.name)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return store.Series{}, err
	}
	for {
		var p store.SeriesStep
		switch {
		case st.Name == "":
			p = r.step(store.Series{}, first)
		case st.Fingerprint == r.fp:
			return st, nil
		case st.Last.After(now) && r.has(st.Last):
			// The pending time is one of the new Schedule's: kept, its
			// message rewritten (the payload may have changed).
			p = r.step(st, st.Last)
		default:
			// From the new Schedule's next time on; the pending message
			// of the old one, if its time has not come, goes.
			p = r.step(st, first)
			if st.Last.After(now) {
				p.Cancel = st.Pending
			}
		}
		cur, ok, err := q.keeper.AdvanceSeries(ctx, p)
		if err != nil {
			return store.Series{}, err
		}
		if ok {
			q.wakeAt(cur.Last)
			q.observe(Event{Kind: EventEnqueued, ID: p.Message.ID, MessageKind: p.Message.Kind})
			return cur, nil
		}
		st = cur // another process moved first: look again
	}
}

// has reports whether t is a time of r's Schedule.
func (r *seriesRun) has(t time.Time) bool {
	n, err := nextTime(r.sched, t.Add(-time.Nanosecond))
	return err == nil && n.Equal(t)
}

// step is the step from the state st (zero: none) that writes the
// message of t and makes t the series' Last.
func (r *seriesRun) step(st store.Series, t time.Time) store.SeriesStep {
	next, _ := nextTime(r.sched, t) // checked by fingerprint; zero ends
	return store.SeriesStep{
		Name: r.name, ExpectLast: st.Last, ExpectFingerprint: st.Fingerprint,
		Fingerprint: r.fp, Last: t, Next: next,
		Message: Message{ID: ScheduleID(r.name, t), Payload: r.payload, Due: t},
	}
}

// fireSeries runs when r's Last comes due, on the wheel: the step goes to
// a goroutine of its own, since it calls the store.
func (q *Queue) fireSeries(r *seriesRun) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || r.stopped {
		return
	}
	q.wg.Add(1)
	go func() {
		defer q.wg.Done()
		q.stepSeries(r)
	}()
}

// seriesRetry is how long a process waits before it tries a step again
// after a store error.
const seriesRetry = time.Second

// stepSeries writes the messages of r's series that are due to be
// written: while its Last has come, the message of the time after it
// (or, after a downtime, of the latest time passed), then arms r's timer
// for the new Last.
func (q *Queue) stepSeries(r *seriesRun) {
	r.mu.Lock()
	defer r.mu.Unlock()
	retry := func(err error) {
		q.storeFailure(Event{Op: OpSeries, ID: r.name, Err: err})
		q.log.Error("durable: a step of a series failed; trying again", "series", r.name, "err", err)
		q.armSeries(r, q.clock.Now().Add(seriesRetry))
	}
	var st store.Series
	err := q.call(func() (err error) {
		st, err = q.keeper.Series(q.ctx, r.name)
		return err
	})
	for {
		switch {
		case errors.Is(err, ErrClosed):
			return
		case errors.Is(err, ErrNotFound) || (err == nil && st.Name == ""):
			q.dropSeries(r, nil) // unscheduled
			return
		case err != nil:
			retry(err)
			return
		case st.Fingerprint != r.fp:
			q.dropSeries(r, fmt.Errorf("%w: series %q (fingerprint %s here, %s in the store)", ErrScheduleConflict, r.name, r.fp, st.Fingerprint))
			return
		}
		now := q.clock.Now()
		if st.Last.After(now) {
			q.armSeries(r, st.Last)
			return
		}
		if st.Next.IsZero() {
			return // the schedule has no more times
		}
		// The time to write: Next, or after a downtime the latest time
		// that has passed.
		t := st.Next
		for !t.After(now) {
			n, err := nextTime(r.sched, t)
			if err != nil || n.IsZero() || n.After(now) {
				break
			}
			t = n
		}
		p := r.step(st, t)
		var ok bool
		err = q.call(func() (err error) {
			st, ok, err = q.keeper.AdvanceSeries(q.ctx, p)
			return err
		})
		if err == nil && ok {
			q.wakeAt(t)
			q.observe(Event{Kind: EventEnqueued, ID: p.Message.ID, MessageKind: p.Message.Kind})
		}
	}
}

// armSeries arms r's timer for at, unless r no longer runs.
func (q *Queue) armSeries(r *seriesRun, at time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed && !r.stopped {
		r.timer.ResetAt(at)
	}
}

// dropSeries ends this queue's part in r's series: it was unscheduled
// (err nil) or rewritten with another Schedule (err says so).
func (q *Queue) dropSeries(r *seriesRun, err error) {
	q.mu.Lock()
	r.stopLocked()
	if q.series[r.name] == r {
		delete(q.series, r.name)
	}
	q.mu.Unlock()
	if err != nil {
		q.log.Error("durable: this process stops taking part in a series", "series", r.name, "err", err)
		q.observe(Event{Kind: EventScheduleConflict, ID: r.name, Err: err})
	}
}

// Unschedule ends the series name in every process: no further time is
// enqueued, and the pending message of the next time, if any, is
// cancelled (unless it has been handed out already). It reports whether
// there was such a series.
func (q *Queue) Unschedule(ctx context.Context, name string) (bool, error) {
	if err := q.keepsSeries(); err != nil {
		return false, err
	}
	q.mu.Lock()
	if r := q.series[name]; r != nil {
		r.stopLocked()
		delete(q.series, name)
	}
	q.mu.Unlock()
	var found bool
	err := q.call(func() (err error) {
		found, err = q.keeper.DeleteSeries(ctx, name)
		return err
	})
	return found, err
}

// Schedules lists the series the store knows, by name.
func (q *Queue) Schedules(ctx context.Context) ([]ScheduleInfo, error) {
	if err := q.keepsSeries(); err != nil {
		return nil, err
	}
	var list []store.Series
	err := q.call(func() (err error) {
		list, err = q.keeper.ListSeries(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]ScheduleInfo, len(list))
	for i, s := range list {
		out[i] = ScheduleInfo{Name: s.Name, Enqueued: s.Last, Last: s.Last, Next: s.Next}
	}
	return out, nil
}

// stopSeriesLocked stops every series timer of the queue, on Close.
func (q *Queue) stopSeriesLocked() {
	for name, r := range q.series {
		r.stopLocked()
		delete(q.series, name)
	}
}

// stopLocked stops r's timer for good; q.mu is held.
func (r *seriesRun) stopLocked() {
	r.stopped = true
	r.timer.Stop()
}
