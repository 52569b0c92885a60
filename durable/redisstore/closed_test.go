package redisstore

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// TestRunOverAClosedClientReturnsAnError: a client closed under the store
// cannot come back: its errors wrap store.ErrClosed, and Run returns one
// at once rather than retrying until its ctx ends and returning nil.
func TestRunOverAClosedClientReturnsAnError(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	srv := startRedis(t)
	c := srv.newClient()
	s := openStore(t, c, "q", WithLogger(quiet))
	q, err := durable.New(s, durable.WithLogger(quiet))
	require.NoError(t, err)
	defer func() { assert.NoError(t, q.Close()) }()
	require.NoError(t, c.Close())

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	err = q.Run(ctx, 2, func(context.Context, *durable.Delivery) error { return nil })
	require.ErrorIs(t, err, store.ErrClosed)
	assert.Contains(t, err.Error(), "client is closed")
	assert.Less(t, time.Since(start), 5*time.Second)
}
