package durable_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/require"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/internal/storetest"
)

func TestBoltStoreClaimAheadContract(t *testing.T) {
	mock := clock.NewMock()
	s, err := durable.OpenBoltStore(filepath.Join(t.TempDir(), "q.db"), durable.WithClock(mock))
	require.NoError(t, err)
	defer s.Close()
	storetest.ClaimAhead(t, s, mock.Now)
	storetest.ConfirmRace(t, s, mock.Now, 300)
	storetest.ClaimHeld(t, s, true)
}

func TestBoltStoreInspectContract(t *testing.T) {
	mock := clock.NewMock()
	mock.Set(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC))
	s, err := durable.OpenBoltStore(filepath.Join(t.TempDir(), "q.db"), durable.WithClock(mock))
	require.NoError(t, err)
	defer s.Close()
	storetest.Inspect(t, s, mock.Now, mock.Add)
	storetest.ListPaging(t, s, mock.Now, 2500, 1000, true)
}
