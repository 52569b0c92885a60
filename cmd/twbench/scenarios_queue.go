package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/seed64e23a5c/timingwheel"
	"github.com/seed64e23a5c/timingwheel/internal/heapqueue"
	"github.com/seed64e23a5c/timingwheel/queue"
)

// init registers the queue scenario.
func init() {
	register(scenario{
		name:  "queue",
		order: 60,
		help: "the keyed delay queue vs a container/heap+map queue, in the runtime column: " +
			"Offer(1s)+Remove with -pending items pending (-ops pairs), heap per item, " +
			"offer->take items/s and take lateness over min(1s, -window) with 4 takers, -pending/5 items (at least 10k)",
		timers: func(o *options) int { return max(o.pending, queueTakeCount(o)) },
		run:    runQueue,
	})
}

// Units that only the queue scenario uses.
const (
	unitBItem    = "B/item"
	unitItemsSec = "items/s"
)

// queueTakers is the number of goroutines calling Take in the throughput
// and lateness figures; queueProducers offer in the throughput figure.
const (
	queueTakers    = 4
	queueProducers = 2
)

// qvalue is the type of the items' values; its size is left out of the
// per-item bytes.
type qvalue = int64

// queueKeyLen is the length of every key. At 16 bytes a key's string data
// fills its size class exactly, so len(key) is what it takes on the heap.
const queueKeyLen = 16

// queueKey returns the key prefix-i, zero-padded to queueKeyLen bytes.
func queueKey(prefix byte, i int) string {
	var b [queueKeyLen]byte
	b[0] = prefix
	for j := queueKeyLen - 1; j > 0; j-- {
		b[j] = byte('0' + i%10)
		i /= 10
	}
	return string(b[:])
}

// queueKeys returns n distinct keys with prefix.
func queueKeys(prefix byte, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = queueKey(prefix, i)
	}
	return keys
}

// queueTakeCount is the number of items of the throughput and lateness
// figures: -pending/5, at least 10k.
func queueTakeCount(o *options) int { return max(o.pending/5, 10_000) }

// queueWindow is the window over which the lateness figure's items are
// due: 1s, or -window if shorter.
func queueWindow(o *options) time.Duration { return min(time.Second, o.window) }

// delayQueue is what the scenario measures of both queues.
type delayQueue interface {
	Offer(key string, v qvalue, delay time.Duration) error
	Remove(key string) bool
	Take(ctx context.Context) (queue.Item[qvalue], error)
	Len() int
	Close()
}

// ourQueue adapts a queue.Queue on a wheel of its own to delayQueue.
type ourQueue struct {
	*queue.Queue[qvalue]
	w *timingwheel.TimingWheel
}

// Close closes the queue and stops its wheel.
func (q ourQueue) Close() {
	q.Queue.Close()
	q.w.Stop()
}

// A queueImpl names a queue and makes empty ones.
type queueImpl struct {
	label string
	make  func() (delayQueue, error)
}

// queueImpls returns ours, on a wheel with -tick and -wheel-size and the
// inline executor whatever -executor says (the queue's tasks are short),
// and the heap baseline.
func queueImpls(e *env) [2]queueImpl {
	return [2]queueImpl{
		{"ours", func() (delayQueue, error) {
			o := *e.opts
			o.executor = executorInline
			w, err := timingwheel.New(o.wheelOptions()...)
			if err != nil {
				return nil, err
			}
			w.Start()
			return ourQueue{queue.New[qvalue](queue.WithWheel(w)), w}, nil
		}},
		{"heap queue", func() (delayQueue, error) { return newHeapQueue(), nil }},
	}
}

// runQueue measures the timingwheel queue (ours) and the heap queue, one
// after the other for each figure, freeing each before the next.
func runQueue(e *env) ([]row, error) {
	const vs = " (vs heap queue)"
	n, k := e.opts.pending, queueTakeCount(e.opts)
	impls := queueImpls(e)
	label := "N=" + formatCount(n)

	// Offer+Remove and the heap per item share one preload.
	newKeys := queueKeys('n', e.opts.ops)
	var pend [2]queuePendingResult
	for i, impl := range impls {
		r, err := queuePending(e, impl, n, newKeys)
		if err != nil {
			return nil, err
		}
		pend[i] = r
		release()
	}
	newKeys = nil
	for i, r := range pend {
		if r.failed > 0 {
			fmt.Fprintf(e.stderr, "twbench: queue %s %s: %d of %d Remove calls returned false\n",
				label, impls[i].label, r.failed, e.opts.ops)
		}
	}

	var thr [2]float64
	for i, impl := range impls {
		r, err := queueThroughput(impl, k)
		if err != nil {
			return nil, err
		}
		thr[i] = r
		release()
	}

	var late [2][]time.Duration
	var early [2]int
	win := queueWindow(e.opts)
	for i, impl := range impls {
		r, err := queueLateness(e, impl, k, win)
		if err != nil {
			return nil, err
		}
		late[i] = r
		for _, l := range r {
			if l >= 0 {
				break
			}
			early[i]++
		}
		if early[i] > 0 {
			fmt.Fprintf(e.stderr, "twbench: queue %s: %d of %d items were taken before their due time\n",
				impl.label, early[i], k)
		}
		release()
	}

	takers := fmt.Sprintf("%d takers, K=%s", queueTakers, formatCount(k))
	lateOf := fmt.Sprintf("%s over %v", takers, win)
	p := func(i int, q float64) float64 { return micros(percentile(late[i], q)) }
	return []row{
		both("offer(1s)+remove, "+label+vs, unitNsOp, pend[0].nsOp, pend[1].nsOp),
		both("allocs offer+remove, "+label+vs, unitAllocsOp, pend[0].allocsOp, pend[1].allocsOp),
		both("bytes offer+remove, "+label+vs, unitBytesOp, pend[0].bytesOp, pend[1].bytesOp),
		both("heap per pending item beyond key and value, "+label+vs, unitBItem, pend[0].perItem, pend[1].perItem),
		both(fmt.Sprintf("offer->take, %d producers %s%s", queueProducers, takers, vs), unitItemsSec, thr[0], thr[1]),
		both("take lateness p50, "+lateOf+vs, unitMicros, p(0, 0.50), p(1, 0.50)),
		both("take lateness p99, "+lateOf+vs, unitMicros, p(0, 0.99), p(1, 0.99)),
		both("taken before due, "+lateOf+vs, unitCount, float64(early[0]), float64(early[1])),
	}, nil
}

// queuePendingResult is one queue's Offer+Remove timing and heap per item
// with n items pending.
type queuePendingResult struct {
	nsOp, allocsOp, bytesOp float64
	perItem                 float64
	// failed counts the Remove calls that returned false, which should
	// not happen.
	failed int
}

// queuePending preloads a new queue of impl with n items due in 1-2h,
// measures the heap they take, then times one Offer(newKeys[j], 1s) and
// Remove(newKeys[j]) per new key, and closes the queue.
//
// The heap per item is the live heap after runtime.GC() with the items
// pending, less the live heap before the keys and the queue were made,
// less the slice holding the keys, divided by n, less the key (its bytes
// and a string header) and the value.
func queuePending(e *env, impl queueImpl, n int, newKeys []string) (queuePendingResult, error) {
	var res queuePendingResult
	sliceBytes := stringSliceBytes(n)
	base := liveHeap()
	keys := make([]string, n)
	q, err := impl.make()
	if err != nil {
		return res, err
	}
	r := newRand()
	var offerErr error
	e.each(fmt.Sprintf("queue: preloading %s, N=%s", impl.label, formatCount(n)), n, func(i int) {
		keys[i] = queueKey('p', i)
		if err := q.Offer(keys[i], qvalue(i), farDeadline(r)); err != nil && offerErr == nil {
			offerErr = err
		}
	})
	if offerErr != nil {
		q.Close()
		return res, fmt.Errorf("%s: preload: %w", impl.label, offerErr)
	}
	after := liveHeap()
	perKey := float64(queueKeyLen + unsafe.Sizeof("")) // its bytes and a header
	res.perItem = perTimer(base, after, sliceBytes, n) - perKey - float64(unsafe.Sizeof(qvalue(0)))
	runtime.KeepAlive(keys)

	next := 0
	res.nsOp, res.allocsOp, res.bytesOp = measureOps(len(newKeys), func(m int) {
		for _, key := range newKeys[next : next+m] {
			_ = q.Offer(key, 1, time.Second)
			if !q.Remove(key) {
				res.failed++
			}
		}
		next += m
	})
	if got := q.Len(); got != n {
		q.Close()
		return res, fmt.Errorf("%s: %d items held after the Offer+Remove pairs, want %d", impl.label, got, n)
	}
	q.Close()
	return res, nil
}

// stringSliceBytes measures the heap that a slice of n strings takes, as
// rounded up by the allocator; never less than 16n.
func stringSliceBytes(n int) uint64 {
	base := liveHeap()
	s := make([]string, n)
	after := liveHeap()
	runtime.KeepAlive(s)
	return max(after-min(base, after), uint64(n)*uint64(unsafe.Sizeof("")))
}

// queueGiveUp is how long after its items are due a figure waits for the
// takers before it fails.
const queueGiveUp = time.Minute

// takeAll runs queueTakers goroutines that call q.Take until k items have
// been taken in all, calling took with each item as it is taken, and
// returns when they are done, with the time the last item was taken. The
// takers are waiting in Take when start is called; start offers the items
// and returns by when they all should be due. takeAll fails if the takers
// have not taken them all queueGiveUp later.
func takeAll(q delayQueue, k int, took func(it queue.Item[qvalue]), start func() time.Time) (time.Time, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		taken   atomic.Int64
		last    time.Time // written by the taker of the k-th item
		errOnce sync.Once
		failure error
		wg      sync.WaitGroup
		waiting sync.WaitGroup
	)
	wg.Add(queueTakers)
	waiting.Add(queueTakers)
	for range queueTakers {
		go func() {
			defer wg.Done()
			waiting.Done()
			for {
				it, err := q.Take(ctx)
				if err != nil {
					if !errors.Is(err, context.Canceled) {
						errOnce.Do(func() { failure = err })
						cancel()
					}
					return
				}
				took(it)
				if taken.Add(1) == int64(k) {
					last = time.Now()
					cancel()
				}
			}
		}()
	}
	waiting.Wait()
	// Let the takers block in Take before the first item comes.
	time.Sleep(time.Millisecond)
	due := start()
	giveUp := time.AfterFunc(time.Until(due)+queueGiveUp, cancel)
	defer giveUp.Stop()
	wg.Wait()
	if failure != nil {
		return time.Time{}, failure
	}
	if n := taken.Load(); n != int64(k) {
		return time.Time{}, fmt.Errorf("only %d of %d items taken within %v of their due time", n, k, queueGiveUp)
	}
	if n := q.Len(); n != 0 {
		return time.Time{}, fmt.Errorf("%d items left after all %d were taken", n, k)
	}
	return last, nil
}

// queueThroughput returns the items per second that pass through a new
// queue of impl: queueProducers goroutines offer k items due at once
// between them, and queueTakers take them, from the first offer to the
// last take.
func queueThroughput(impl queueImpl, k int) (float64, error) {
	q, err := impl.make()
	if err != nil {
		return 0, err
	}
	defer q.Close()
	keys := queueKeys('t', k)
	runtime.GC()
	var t0 time.Time
	last, err := takeAll(q, k, func(queue.Item[qvalue]) {}, func() time.Time {
		t0 = time.Now()
		for p := range queueProducers {
			go func() {
				for i := k * p / queueProducers; i < k*(p+1)/queueProducers; i++ {
					_ = q.Offer(keys[i], qvalue(i), 0)
				}
			}()
		}
		return t0
	})
	if err != nil {
		return 0, fmt.Errorf("%s throughput: %w", impl.label, err)
	}
	return float64(k) / last.Sub(t0).Seconds(), nil
}

// queueLateness offers k items to a new queue of impl, due at random
// across window after a lead time long enough to offer them all, and
// returns each item's lateness as queueTakers take it, time.Since(its
// Due), sorted. A negative lateness is an item taken before it was due.
func queueLateness(e *env, impl queueImpl, k int, window time.Duration) ([]time.Duration, error) {
	q, err := impl.make()
	if err != nil {
		return nil, err
	}
	defer q.Close()
	keys := queueKeys('l', k)
	offsets := make([]time.Duration, k)
	r := rand.New(rand.NewPCG(5, 6))
	for i := range offsets {
		offsets[i] = time.Duration(r.Int64N(int64(window)))
	}
	late := make([]time.Duration, k)
	lead := 100*time.Millisecond + time.Duration(k)*2*time.Microsecond
	runtime.GC()

	_, err = takeAll(q, k, func(it queue.Item[qvalue]) {
		late[it.Value] = time.Since(it.Due)
	}, func() time.Time {
		t0 := time.Now()
		base := t0.Add(lead)
		e.each("queue: offering to "+impl.label, k, func(i int) {
			_ = q.Offer(keys[i], qvalue(i), time.Until(base.Add(offsets[i])))
		})
		if took := time.Since(t0); took > lead {
			fmt.Fprintf(e.stderr, "twbench: queue lateness %s: offering took %v, longer than the %v lead: the first items were offered after their due time\n",
				impl.label, took.Round(time.Millisecond), lead)
		}
		return base.Add(window)
	})
	if err != nil {
		return nil, fmt.Errorf("%s lateness: %w", impl.label, err)
	}
	slices.Sort(late)
	return late, nil
}

// heapQueue adapts the baseline, internal/heapqueue, to delayQueue.
type heapQueue struct{ *heapqueue.Queue[qvalue] }

func newHeapQueue() heapQueue { return heapQueue{heapqueue.New[qvalue]()} }

// Take is the baseline's Take, with its item and ErrClosed in queue's terms.
func (q heapQueue) Take(ctx context.Context) (queue.Item[qvalue], error) {
	it, err := q.Queue.Take(ctx)
	if errors.Is(err, heapqueue.ErrClosed) {
		err = queue.ErrClosed
	}
	return queue.Item[qvalue](it), err
}
