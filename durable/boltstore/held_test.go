package boltstore

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/internal/leasetest"
)

func TestHeldCostsNothing(t *testing.T) {
	mock := clock.NewMock()
	mock.Set(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	s, err := Open(filepath.Join(t.TempDir(), "q.db"), WithClock(mock))
	require.NoError(t, err)
	defer func() { assert.NoError(t, s.Close()) }()
	leasetest.HeldCostsNothing(t, s, time.Minute, func() { mock.Add(time.Minute) })
}
