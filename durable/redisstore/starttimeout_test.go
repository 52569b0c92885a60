package redisstore

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// silentServer accepts connections and never answers, until the test
// ends.
func silentServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return l.Addr().String()
}

// TestStartTimeoutBoundsNew: against a server that never answers, New
// returns within the start timeout and a small margin, whatever the
// client's own timeouts.
func TestStartTimeoutBoundsNew(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: silentServer(t)})
	defer c.Close()
	began := time.Now()
	_, err := New(c, "q", WithStartTimeout(1500*time.Millisecond))
	took := time.Since(began)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrStartTimeout)
	assert.GreaterOrEqual(t, took, 1500*time.Millisecond)
	assert.Less(t, took, 1500*time.Millisecond+500*time.Millisecond, "New took %v", took)
}
