package queue

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stressVal is what the stress test offers: enough to tell versions apart
// and to check that an item's value and due time belong together.
type stressVal struct {
	key string
	ver int
	due time.Time
}

// stressOp is one operation of a producer on one of its keys.
type stressOp struct {
	ver     int  // the version offered, or 0 for a Remove
	removed bool // what Remove returned
}

// Rules 2, 3, 4 and 7 under load: several takers (some with contexts that
// keep ending), producers upserting and removing their keys, and the clock
// moving, all at once. Each key belongs to one producer, so its operations
// are ordered, and the test replays them against what the takers got.
func TestStressExactlyOnce(t *testing.T) {
	const (
		producers    = 4
		keysPer      = 16
		takers       = 6
		clockSteps   = 150
		step         = time.Millisecond
		maxDelay     = 20 * time.Millisecond
		opsPerYield  = 8
		takeDeadline = 500 * time.Microsecond // real time, for the impatient takers
	)
	mock := clock.NewMock()
	q := New[stressVal](WithClock(mock))
	defer q.Close()
	w := q.c.wheel
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// Takers.
	var (
		tmu       sync.Mutex
		delivered = map[string]map[int]int{} // key -> version -> times
		early     atomic.Int64
		ctxEnded  atomic.Int64
		twg       sync.WaitGroup
	)
	for i := range takers {
		twg.Add(1)
		go func() {
			defer twg.Done()
			for {
				tctx, tcancel := ctx, context.CancelFunc(func() {})
				if i%2 == 1 {
					tctx, tcancel = context.WithTimeout(ctx, takeDeadline)
				}
				it, err := q.Take(tctx)
				tcancel()
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					ctxEnded.Add(1)
					continue
				}
				if it.Due.After(mock.Now()) {
					early.Add(1)
				}
				assert.Equal(t, it.Key, it.Value.key)
				assert.True(t, it.Due.Equal(it.Value.due), "value and due time of different versions")
				tmu.Lock()
				if delivered[it.Key] == nil {
					delivered[it.Key] = map[int]int{}
				}
				delivered[it.Key][it.Value.ver]++
				tmu.Unlock()
			}
		}()
	}

	// A poller: TryTake, Peek and Len alongside.
	var pollStop atomic.Bool
	twg.Add(1)
	go func() {
		defer twg.Done()
		r := rand.New(rand.NewPCG(7, 7))
		for !pollStop.Load() {
			k := string(rune('a'+r.IntN(producers))) + string(rune('A'+r.IntN(keysPer)))
			if it, ok := q.Peek(k); ok {
				assert.Equal(t, k, it.Key)
				assert.True(t, it.Due.Equal(it.Value.due))
			}
			assert.GreaterOrEqual(t, q.Len(), 0)
			it, ok := q.TryTake()
			if !ok {
				time.Sleep(50 * time.Microsecond)
				continue
			}
			if it.Due.After(mock.Now()) {
				early.Add(1)
			}
			tmu.Lock()
			if delivered[it.Key] == nil {
				delivered[it.Key] = map[int]int{}
			}
			delivered[it.Key][it.Value.ver]++
			tmu.Unlock()
		}
	}()

	// Producers, each with its own keys, until the clock has run.
	var (
		stop     atomic.Bool
		logs     = make([]map[string][]stressOp, producers)
		pwg      sync.WaitGroup
		versions atomic.Int64
	)
	for p := range producers {
		logs[p] = map[string][]stressOp{}
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			r := rand.New(rand.NewPCG(uint64(p), 42))
			keys := make([]string, keysPer)
			for i := range keys {
				keys[i] = string(rune('a'+p)) + string(rune('A'+i))
			}
			for n := 0; !stop.Load(); n++ {
				k := keys[r.IntN(len(keys))]
				if r.IntN(4) == 0 {
					logs[p][k] = append(logs[p][k], stressOp{removed: q.Remove(k)})
				} else {
					ver := int(versions.Add(1))
					due := mock.Now().Add(time.Duration(r.Int64N(int64(maxDelay))) - 2*step)
					assert.NoError(t, q.OfferAt(k, stressVal{k, ver, due}, due))
					logs[p][k] = append(logs[p][k], stressOp{ver: ver})
				}
				if n%opsPerYield == 0 {
					time.Sleep(10 * time.Microsecond) // let the clock move between ops
				}
			}
		}()
	}

	for range clockSteps {
		mock.Add(step)
		require.NoError(t, w.Sync(ctx))
	}
	stop.Store(true)
	pwg.Wait()
	// Everything left comes due; the takers drain it.
	mock.Add(time.Second)
	require.NoError(t, w.Sync(ctx))
	require.Eventually(t, func() bool { return q.Len() == 0 }, waitTimeout, time.Millisecond, "takers did not drain the queue")
	left := q.Close()
	pollStop.Store(true)
	twg.Wait()

	assert.Empty(t, left)
	assert.Zero(t, early.Load(), "items taken before their due time")
	t.Logf("%d versions offered, %d deliveries, %d takes ended by their context",
		versions.Load(), countDeliveries(delivered), ctxEnded.Load())

	// Replay each key's operations.
	checked := 0
	for _, log := range logs {
		for k, ops := range log {
			got := delivered[k]
			for ver, times := range got {
				assert.Equal(t, 1, times, "%s version %d delivered %d times", k, ver, times)
			}
			live := 0 // the latest version offered, if not removed since
			for _, op := range ops {
				switch {
				case op.ver != 0:
					live = op.ver
				case op.removed:
					require.NotZero(t, live, "%s: Remove found an item after a Remove", k)
					assert.Zero(t, got[live], "%s version %d delivered after Remove returned true", k, live)
					live = 0
				default:
					if live != 0 {
						assert.Equal(t, 1, got[live], "%s version %d neither removed nor delivered", k, live)
					}
					live = 0
				}
				checked++
			}
			if live != 0 {
				assert.Equal(t, 1, got[live], "%s version %d, the last, not delivered", k, live)
			}
			offered := map[int]bool{}
			for _, op := range ops {
				offered[op.ver] = true
			}
			for ver := range got {
				assert.True(t, offered[ver], "%s version %d delivered but never offered", k, ver)
			}
		}
	}
	assert.Greater(t, checked, 1000, "too few operations to mean anything")
}

func countDeliveries(d map[string]map[int]int) int {
	n := 0
	for _, m := range d {
		for _, c := range m {
			n += c
		}
	}
	return n
}
