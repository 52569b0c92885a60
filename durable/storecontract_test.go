package durable_test

import (
	"path/filepath"
	"testing"

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
}
