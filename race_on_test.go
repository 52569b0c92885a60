//go:build race

package timingwheel

// raceEnabled reports whether the tests run under the race detector,
// which makes sync.Pool drop a quarter of what is put back, on purpose.
const raceEnabled = true
