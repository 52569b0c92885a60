package durableweb

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/memstore"
)

// ended reports whether d's sampler returned within a few seconds.
func ended(d *Dashboard) bool {
	select {
	case <-d.done:
		return true
	case <-time.After(5 * time.Second):
		return false
	}
}

func TestSamplerEndsWhenTheQueueCloses(t *testing.T) {
	q, err := durable.New(memstore.New(nil))
	require.NoError(t, err)
	d := New(q, WithSampleInterval(5*time.Millisecond))
	require.Eventually(t, func() bool { return len(d.ring.samples()) >= 2 }, 5*time.Second, time.Millisecond)
	require.NoError(t, q.Close())
	require.True(t, ended(d), "the sampler ends once Stats returns ErrClosed")
	assert.ErrorIs(t, d.ring.err, durable.ErrClosed)
	require.NoError(t, d.Close())
	require.NoError(t, d.Close(), "Close is idempotent")
}

func TestSamplerEndsOnCloseAndContext(t *testing.T) {
	q := newQueue(t)
	d := New(q, WithSampleInterval(time.Hour))
	require.Eventually(t, func() bool { return len(d.ring.samples()) == 1 }, 5*time.Second, time.Millisecond, "one sample at the start")
	require.NoError(t, d.Close())
	require.True(t, ended(d))
	require.Len(t, d.ring.samples(), 1, "none after Close")

	ctx, cancel := context.WithCancel(context.Background())
	d = New(q, WithContext(ctx))
	cancel()
	require.True(t, ended(d), "the sampler ends with the context of WithContext")
}

func TestRingKeepsTheLatestInOrder(t *testing.T) {
	r := newRing(3)
	at := time.Unix(0, 0)
	for i := range 5 {
		r.add(sample{At: at.Add(time.Duration(i) * time.Second)})
	}
	ss := r.samples()
	require.Len(t, ss, 3)
	for i, s := range ss {
		assert.Equal(t, at.Add(time.Duration(i+2)*time.Second), s.At)
	}
}

func TestObserverCountsAndLateness(t *testing.T) {
	o := NewObserver()
	assert.Equal(t, Lateness{}, o.Lateness())
	for i := 1; i <= 100; i++ {
		o.Observe(durable.Event{Kind: durable.EventEnqueued, N: 1})
		o.Observe(durable.Event{Kind: durable.EventDelivered, N: 1, Lateness: time.Duration(i) * time.Millisecond})
	}
	o.Observe(durable.Event{Kind: durable.EventAcked, N: 1})
	o.Observe(durable.Event{Kind: durable.EventRetried, N: 7})
	o.Observe(durable.Event{Kind: durable.EventDead, N: 2})
	o.Observe(durable.Event{Kind: durable.EventHandled})
	assert.Equal(t, Counts{Enqueued: 100, Delivered: 100, Acked: 1, Retried: 7, Died: 2}, o.Counts())
	l := o.Lateness()
	assert.Equal(t, 100, l.N)
	assert.Equal(t, 51*time.Millisecond, l.P50)
	assert.Equal(t, 91*time.Millisecond, l.P90)
	assert.Equal(t, 100*time.Millisecond, l.P99)
	assert.Equal(t, 100*time.Millisecond, l.Max)
	for range latencies {
		o.Observe(durable.Event{Kind: durable.EventDelivered, Lateness: time.Second})
	}
	assert.Equal(t, Lateness{N: latencies, P50: time.Second, P90: time.Second, P99: time.Second, Max: time.Second}, o.Lateness(),
		"only the latest deliveries count")
}

func TestStatsJSONWithAnObservedQueue(t *testing.T) {
	o := NewObserver()
	q := newQueue(t, durable.WithObserver(o))
	ctx := context.Background()
	require.NoError(t, q.Enqueue(ctx, durable.Message{ID: "a"}))
	require.NoError(t, q.Enqueue(ctx, durable.Message{ID: "b", Due: time.Now().Add(time.Hour)}))
	dl, err := q.Receive(ctx)
	require.NoError(t, err)
	require.NoError(t, dl.Ack(ctx))
	_, srv := newDashboard(t, q, WithObserver(o), WithSampleInterval(10*time.Millisecond))

	resp, body := get(t, srv, "/queue/stats.json")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var out struct {
		Pending, Dead int
		Counts        Counts
		Fields        map[string]string
	}
	require.NoError(t, json.Unmarshal([]byte(body), &out))
	assert.Equal(t, 1, out.Pending)
	assert.Equal(t, Counts{Enqueued: 2, Delivered: 1, Acked: 1}, out.Counts)
	assert.Equal(t, "1", out.Fields["pending"])
	assert.Equal(t, "2", out.Fields["total-enqueued"])
	assert.Equal(t, "1", out.Fields["late-n"])
	assert.Regexp(t, `^in (59m|1h)`, out.Fields["next-due-in"])

	_, body = get(t, srv, "/queue/")
	assert.Contains(t, body, `data-stat="total-acked">1<`)
	assert.Contains(t, body, `src="throughput.svg"`)

	resp, body = get(t, srv, "/queue/chart.svg")
	assert.Equal(t, "image/svg+xml", resp.Header.Get("Content-Type"))
	assert.Contains(t, body, "<polyline")
	assert.NotContains(t, body, "<script")
}

func TestStatsJSONOfAClosedQueue(t *testing.T) {
	q, err := durable.New(memstore.New(nil))
	require.NoError(t, err)
	_, srv := newDashboard(t, q)
	require.NoError(t, q.Close())
	_, body := get(t, srv, "/queue/stats.json")
	assert.Contains(t, body, `"error":"the queue is closed"`)
	resp, body := get(t, srv, "/queue/")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, body, "Cannot read the queue: the queue is closed")
}

func TestSamplesAreBounded(t *testing.T) {
	q := newQueue(t)
	d := New(q, WithSampleInterval(time.Nanosecond))
	require.NoError(t, d.Close())
	assert.Len(t, d.ring.buf, maxSamples)
	d = New(q)
	require.NoError(t, d.Close())
	assert.Len(t, d.ring.buf, 721, "an hour of samples every 5s, both ends")
}
