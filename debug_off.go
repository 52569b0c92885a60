//go:build !timingwheel_debug

package timingwheel

// debugTransitions makes move check every change of a timer's state
// against timer.go's table (the build tag timingwheel_debug).
const debugTransitions = false
