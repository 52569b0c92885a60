package redisstore

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/internal/syncbuf"
)

// TestRedisRestart runs a producer and two consumers on a queue while its
// redis-server, with AOF and appendfsync always, is killed with SIGKILL and
// restarted. While Redis is down, Enqueue returns errors and Receive keeps
// trying; afterwards every message whose Enqueue returned nil is
// delivered and acked.
func TestRedisRestart(t *testing.T) {
	srv := startRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	// go-redis retries a call for seconds by default (4 tries, each
	// dialing 5 times): fewer tries show the queue's own retries.
	o := srv.options()
	o.MaxRetries, o.DialerRetries = 1, 1
	c := redis.NewClient(o)
	defer c.Close()
	s := openStore(t, c, "fault", WithSafetyPoll(time.Second))
	var logs syncbuf.Buffer
	q, err := durable.New(s,
		durable.WithVisibilityTimeout(2*time.Second),
		durable.WithBackoff(func(int) time.Duration { return 50 * time.Millisecond }),
		durable.WithMaxAttempts(1000),
		durable.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	require.NoError(t, err)
	defer q.Close()

	var (
		mu        sync.Mutex
		confirmed = map[string]bool{} // Enqueue returned nil
		acked     = map[string]bool{} // Ack returned nil
		tried     = map[string]error{}
		down      atomic.Bool
		downErrs  atomic.Int64 // Enqueue errors while Redis was down
		upErrs    atomic.Int64
		afterUp   atomic.Int64 // deliveries after the restart
		restarted atomic.Bool
	)
	run, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; run.Err() == nil; i++ {
			id := "m" + strconv.Itoa(i)
			call, cancel := context.WithTimeout(run, 300*time.Millisecond)
			err := q.Enqueue(call, durable.Message{ID: id, Payload: []byte(id)})
			cancel()
			switch {
			case err == nil:
				mu.Lock()
				confirmed[id] = true
				mu.Unlock()
			case run.Err() != nil:
			case down.Load():
				downErrs.Add(1)
			default:
				upErrs.Add(1)
			}
			time.Sleep(time.Millisecond)
		}
	})
	consume, endConsume := context.WithCancel(context.Background())
	defer endConsume()
	var receiveErrs atomic.Int64
	for range 2 {
		wg.Go(func() {
			for {
				d, err := q.Receive(consume)
				if err != nil {
					if consume.Err() == nil {
						receiveErrs.Add(1)
					}
					return
				}
				if restarted.Load() {
					afterUp.Add(1)
				}
				assert.Equal(t, d.ID, string(d.Payload))
				call, cancel := context.WithTimeout(consume, time.Second)
				err = d.Ack(call)
				cancel()
				mu.Lock()
				if err == nil {
					acked[d.ID] = true
				} else {
					tried[d.ID] = err
				}
				mu.Unlock()
			}
		})
	}

	time.Sleep(time.Second)
	down.Store(true)
	srv.kill()
	t.Log("redis-server killed")
	time.Sleep(2 * time.Second)
	srv.start()
	restarted.Store(true)
	down.Store(false)
	t.Log("redis-server restarted")
	time.Sleep(time.Second)
	stop()

	// Everything confirmed is delivered and acked.
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		missing := 0
		for id := range confirmed {
			if !acked[id] && !ackedUnseen(t, c, id, tried[id]) {
				missing++
			}
		}
		n := len(confirmed)
		mu.Unlock()
		if missing == 0 {
			t.Logf("%d messages enqueued, all delivered and acked", n)
			break
		}
		if !time.Now().Before(deadline) {
			mu.Lock()
			for id := range confirmed {
				if !acked[id] {
					m, err := c.HGet(ctx, "tw:{fault}:meta", id).Result()
					t.Logf("%s: meta %q %v, ack tried %v", id, m, err, tried[id])
				}
			}
			mu.Unlock()
			st, err := s.Stats(ctx)
			t.Fatalf("%d of %d confirmed messages not acked; %+v %v", missing, n, st, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	endConsume()
	wg.Wait()

	assert.Positive(t, downErrs.Load(), "Enqueue fails while Redis is down")
	assert.Zero(t, receiveErrs.Load(), "Receive kept trying")
	assert.Contains(t, logs.String(), "claim failed", "Receive logged its retries: %s", logs.String())
	assert.Positive(t, afterUp.Load(), "deliveries resumed after the restart")
	t.Logf("%d Enqueue errors while down, %d while up (during the restart)", downErrs.Load(), upErrs.Load())
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	// Messages whose Enqueue failed may still have been written, and
	// delivered: nothing may be left but those.
	assert.Zero(t, st.Dead)
}

// ackedUnseen reports whether the Ack of id failed (err) but happened: it
// is gone from Redis, and only an Ack deletes a message. The reply of an
// Ack can be lost when Redis dies after writing it to the AOF.
func ackedUnseen(t *testing.T, c *redis.Client, id string, err error) bool {
	if err == nil {
		return false
	}
	n, herr := c.HExists(ctx, "tw:{fault}:meta", id).Result()
	return herr == nil && !n
}
