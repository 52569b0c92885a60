package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckStoreAnswers checks that a Redis that answers passes the check.
func TestCheckStoreAnswers(t *testing.T) {
	addr := startRedis(t)
	o, err := parseArgs([]string{"durable", "-store", "redis://" + addr})
	require.NoError(t, err)
	require.NoError(t, checkStore(o))
}

// TestCheckStoreOnlyForDurable checks that -store is dialled only when
// the durable scenario, its only user, runs, and never for bolt.
func TestCheckStoreOnlyForDurable(t *testing.T) {
	url := "redis://" + silentServer(t)
	o, err := parseArgs([]string{"fire", "-store", url})
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, checkStore(o))
	assert.Less(t, time.Since(start), storeCheckTimeout, "no PING without durable")

	o, err = parseArgs([]string{"durable"})
	require.NoError(t, err)
	require.NoError(t, checkStore(o))

	o, err = parseArgs([]string{"durable", "-store", url})
	require.NoError(t, err)
	start = time.Now()
	err = checkStore(o)
	took := time.Since(start)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no answer to PING within 1.5s")
	assert.GreaterOrEqual(t, took, storeCheckTimeout-50*time.Millisecond, "gave up before its time")
	assert.Less(t, took, 2*time.Second)
}

// TestCheckStoreHidesThePassword checks that the error names the URL
// without its password.
func TestCheckStoreHidesThePassword(t *testing.T) {
	silenceRedisLog()
	o, err := parseArgs([]string{"durable", "-store", "redis://user:secret@" + closedAddr(t) + "/0"})
	require.NoError(t, err)
	err = checkStore(o)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "secret")
	assert.Contains(t, err.Error(), "user:xxxxx@")
}
