package storetest

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// ForQueues is the Harness of a store shared by processes whose stores
// are named by a queue on one backend (a Redis, a database), on the real
// clock: New opens a store of a fresh queue (newQueue names it), Reopen
// closes a store and opens its queue again, as a restarted process would,
// and Second opens another store of its queue, as a second process would.
func ForQueues(newQueue func() string, open func(t *testing.T, queue string) store.Store) Harness {
	var (
		mu     sync.Mutex
		queues = map[store.Store]string{}
	)
	openQueue := func(t *testing.T, queue string) store.Store {
		s := open(t, queue)
		mu.Lock()
		defer mu.Unlock()
		queues[s] = queue
		return s
	}
	queueOf := func(s store.Store) string {
		mu.Lock()
		defer mu.Unlock()
		return queues[s]
	}
	return Harness{
		New: func(t *testing.T) store.Store { return openQueue(t, newQueue()) },
		Reopen: func(t *testing.T, s store.Store) store.Store {
			require.NoError(t, s.Close())
			return openQueue(t, queueOf(s))
		},
		Second: func(t *testing.T, s store.Store) store.Store { return openQueue(t, queueOf(s)) },
	}
}
