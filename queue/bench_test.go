package queue

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/seed64e23a5c/timingwheel/internal/heapqueue"
)

// The benchmarks compare Queue, which keeps pending items on a timing
// wheel, with internal/heapqueue, the classic container/heap + map design, side by
// side. Run them alone on a quiet machine, for example:
//
//	go test -run '^$' -bench . -benchtime 1000000x ./queue
//
// (BenchmarkMemoryPerItem builds 1M items per iteration: use
// -benchtime 1x for it.)

const benchPending = 1_000_000

// benchValue is the value type of the benchmarks.
type benchValue = int64

// benchQueue is what the benchmarks need of a keyed delay queue.
type benchQueue interface {
	Offer(key string, v benchValue, delay time.Duration) error
	Remove(key string) bool
	take(ctx context.Context) error
	Len() int
	close()
}

type wheelQueue struct{ *Queue[benchValue] }

func (q wheelQueue) take(ctx context.Context) error { _, err := q.Take(ctx); return err }
func (q wheelQueue) close()                         { q.Close() }

type classicQueue struct{ *heapqueue.Queue[benchValue] }

func (q classicQueue) take(ctx context.Context) error { _, err := q.Take(ctx); return err }
func (q classicQueue) close()                         { q.Close() }

type impl struct {
	name string
	new  func() benchQueue
}

var impls = []impl{
	{"wheel", func() benchQueue { return wheelQueue{New[benchValue]()} }},
	{"heap", func() benchQueue { return classicQueue{heapqueue.New[benchValue]()} }},
}

// farDelay returns a delay in [1h, 2h): nothing preloaded fires during a
// benchmark.
func farDelay(r *rand.Rand) time.Duration {
	return time.Hour + time.Duration(r.Int64N(int64(time.Hour)))
}

func makeKeys(prefix string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = prefix + strconv.Itoa(i)
	}
	return keys
}

// BenchmarkOfferRemove measures an Offer and a Remove with 1M items
// pending. same-key offers a new key and removes it at once (an order paid
// right away); random removes a random pending item and offers its key
// again (orders paid at any time: the heap must sift from anywhere).
func BenchmarkOfferRemove(b *testing.B) {
	keys := makeKeys("order-", benchPending)
	fresh := makeKeys("fresh-", 1024)
	for _, im := range impls {
		// A parent benchmark runs once: the preload is not repeated as
		// b.N ramps up, and is skipped when -bench filters it out.
		b.Run(fmt.Sprintf("pending=%dM/%s", benchPending/1_000_000, im.name), func(b *testing.B) {
			q := im.new()
			defer q.close()
			r := rand.New(rand.NewPCG(1, 2))
			for _, k := range keys {
				if err := q.Offer(k, 1, farDelay(r)); err != nil {
					b.Fatal(err)
				}
			}
			runtime.GC()
			// A new key due before every pending item, removed at once:
			// the heap sifts it up to the root and back down (its worst
			// case, and the shape of the engine's AfterFuncStop).
			b.Run("new-due-first", func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					k := fresh[i&(len(fresh)-1)]
					_ = q.Offer(k, benchValue(i), time.Second)
					q.Remove(k)
				}
				b.StopTimer()
				if q.Len() != benchPending {
					b.Fatalf("%d pending, want %d", q.Len(), benchPending)
				}
			})
			// A new key due among the pending items, removed at once: the
			// heap barely sifts (its average case).
			b.Run("new-due-among", func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					k := fresh[i&(len(fresh)-1)]
					_ = q.Offer(k, benchValue(i), farDelay(r))
					q.Remove(k)
				}
				b.StopTimer()
				if q.Len() != benchPending {
					b.Fatalf("%d pending, want %d", q.Len(), benchPending)
				}
			})
			// A random pending item removed and its key offered again:
			// every access misses the caches, for both designs.
			b.Run("random", func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					k := keys[r.IntN(len(keys))]
					q.Remove(k)
					_ = q.Offer(k, benchValue(i), farDelay(r))
				}
				b.StopTimer()
				if q.Len() != benchPending {
					b.Fatalf("%d pending, want %d", q.Len(), benchPending)
				}
			})
		})
	}
}

// BenchmarkOfferRemoveFloor measures what any keyed delay queue pays for
// an Offer and a Remove of a new key with 1M keys held, before it orders
// anything by due time: one clock read (the due time), and inserting the
// key into an index by key and deleting it again, here a Go map. Compare
// it with BenchmarkOfferRemove's same-key figures.
func BenchmarkOfferRemoveFloor(b *testing.B) {
	type item struct {
		due int64
		_   benchValue // the value
	}
	index := make(map[string]*item, benchPending)
	for _, k := range makeKeys("order-", benchPending) {
		index[k] = &item{}
	}
	fresh := makeKeys("fresh-", 1024)
	base := time.Now()
	it := &item{}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		k := fresh[i&(len(fresh)-1)]
		it.due = int64(time.Since(base) + time.Second)
		index[k] = it
		delete(index, k)
	}
	b.StopTimer()
	if len(index) != benchPending {
		b.Fatalf("%d keys, want %d", len(index), benchPending)
	}
}

// BenchmarkMemoryPerItem reports the heap per pending item with 1M items
// pending: B/item is beyond the key (its string header; the key's bytes
// are the caller's and not counted) and the value, both of which the
// queue must hold; B/item-total counts them too.
func BenchmarkMemoryPerItem(b *testing.B) {
	keys := makeKeys("order-", benchPending)
	keyAndValue := float64(unsafe.Sizeof("") + unsafe.Sizeof(benchValue(0)))
	for _, im := range impls {
		b.Run(im.name, func(b *testing.B) {
			for range b.N {
				r := rand.New(rand.NewPCG(1, 2))
				before := heapInUse()
				q := im.new()
				for _, k := range keys {
					if err := q.Offer(k, 1, farDelay(r)); err != nil {
						b.Fatal(err)
					}
				}
				perItem := float64(heapInUse()-before) / benchPending
				b.ReportMetric(perItem-keyAndValue, "B/item")
				b.ReportMetric(perItem, "B/item-total")
				q.close()
			}
		})
	}
}

// BenchmarkOfferTake measures the throughput of one producer offering to
// 4 takers blocked in Take: ns/op is per item, from its Offer until all
// have been taken. due offers items already due; 1ms offers them due in a
// millisecond, so that they go through the wheel (or the heap's wait).
func BenchmarkOfferTake(b *testing.B) {
	const takers = 4
	keys := makeKeys("job-", 1<<20)
	for _, delay := range []time.Duration{0, time.Millisecond} {
		name := "due"
		if delay > 0 {
			name = delay.String()
		}
		for _, im := range impls {
			b.Run(fmt.Sprintf("%s/%s", name, im.name), func(b *testing.B) {
				q := im.new()
				var taken atomic.Int64
				var wg sync.WaitGroup
				for range takers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							if err := q.take(context.Background()); err != nil {
								return
							}
							taken.Add(1)
						}
					}()
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					_ = q.Offer(keys[i&(len(keys)-1)], benchValue(i), delay)
				}
				for q.Len() > 0 {
					runtime.Gosched()
				}
				b.StopTimer()
				q.close()
				wg.Wait()
				b.ReportMetric(float64(taken.Load())/float64(b.N), "taken/op")
			})
		}
	}
}
