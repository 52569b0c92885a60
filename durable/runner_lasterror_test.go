package durable

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunKeepsTheHandlersErrorText checks that Run keeps the text of a
// handler's error, and of its panic, with the message: the next attempt's
// Delivery.LastError shows it.
func TestRunKeepsTheHandlersErrorText(t *testing.T) {
	q, mock, _ := testQueue(t, WithMaxAttempts(5), WithBackoff(func(int) time.Duration { return 0 }))
	enqueueDueNow(t, q, mock, "flaky")
	var (
		mu   sync.Mutex
		seen []string
	)
	stop := runInBackground(t, q, 1, func(ctx context.Context, d *Delivery) error {
		mu.Lock()
		seen = append(seen, d.LastError)
		mu.Unlock()
		switch d.Attempt {
		case 1:
			return errors.New("first failure")
		case 2:
			panic("second failure")
		}
		return nil
	})
	require.Eventually(t, drained(t, q), 5*time.Second, time.Millisecond)
	require.NoError(t, stop())
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seen, 3)
	assert.Equal(t, "", seen[0], "no error before the first attempt")
	assert.Equal(t, "first failure", seen[1])
	assert.Contains(t, seen[2], "handler panicked: second failure", "a panic's text, with its stack")
	assert.LessOrEqual(t, len(seen[2]), MaxErrorLen)
}

// TestRunErrorTextOfADeadLetterSurvivesRestart fails a message's only
// attempt through Run, and reads its error text and time of death after
// the file was closed and opened again.
func TestRunErrorTextOfADeadLetterSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	mock := clock.NewMock()
	mock.Set(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC))
	path := filepath.Join(t.TempDir(), "q.db")
	q, err := Open(path, WithClock(mock), WithMaxAttempts(1), withClaimAhead(0))
	require.NoError(t, err)
	enqueuedAt := mock.Now()
	require.NoError(t, q.Enqueue(ctx, Message{ID: "hopeless", Payload: []byte("order 7")}))
	mock.Add(time.Minute)
	stop := runInBackground(t, q, 1, func(ctx context.Context, d *Delivery) error {
		return errors.New("invalid order")
	})
	require.Eventually(t, func() bool {
		st, err := q.Stats(ctx)
		require.NoError(t, err)
		return st.Dead == 1
	}, 5*time.Second, time.Millisecond)
	require.NoError(t, stop())
	require.NoError(t, q.Close())

	q, err = Open(path, WithClock(mock))
	require.NoError(t, err)
	defer q.Close()
	info, err := q.Get(ctx, "hopeless")
	require.NoError(t, err)
	assert.Equal(t, Dead, info.State)
	assert.Equal(t, "invalid order", info.LastError)
	assert.Equal(t, 1, info.Attempt)
	assert.True(t, info.EnqueuedAt.Equal(enqueuedAt), "%v", info.EnqueuedAt)
	assert.True(t, info.DiedAt.Equal(mock.Now()), "%v", info.DiedAt)
	letters, err := q.DeadLetters(ctx, 1)
	require.NoError(t, err)
	require.Len(t, letters, 1)
	assert.True(t, letters[0].Due.Equal(info.DiedAt), "DeadLetters still gives the time of death as Due")
}

func TestGetAndListArguments(t *testing.T) {
	ctx := context.Background()
	q, _, _ := testQueue(t)
	_, err := q.Get(ctx, "none")
	require.ErrorIs(t, err, ErrNotFound)
	_, _, err = q.List(ctx, State(0), "", 1)
	require.ErrorContains(t, err, "invalid state State(0)")
	_, _, err = q.List(ctx, Pending, "", 0)
	require.ErrorContains(t, err, "limit must be positive")
	_, _, err = q.List(ctx, Pending, "d0000000000000000000000000000000a", 1)
	require.ErrorIs(t, err, ErrInvalidCursor, "a cursor of the dead letters")
	_, _, err = q.List(ctx, Pending, "pzz", 1)
	require.ErrorIs(t, err, ErrInvalidCursor)
	list, next, err := q.List(ctx, InFlight, "", 5)
	require.NoError(t, err)
	assert.Empty(t, list)
	assert.Empty(t, next)
	assert.Equal(t, []string{"pending", "in-flight", "dead", "State(9)"},
		[]string{Pending.String(), InFlight.String(), Dead.String(), State(9).String()})
	require.NoError(t, q.Close())
	_, err = q.Get(ctx, "none")
	require.ErrorIs(t, err, ErrClosed)
	_, _, err = q.List(ctx, Pending, "", 1)
	require.ErrorIs(t, err, ErrClosed)
}
