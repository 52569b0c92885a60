//go:build !linux

package main

// A watcher records the programs that run under the tests: on Linux only,
// from /proc.
type watcher struct{}

func newWatcher() *watcher { return &watcher{} }

func (w *watcher) how() string {
	return "not known on this system: testall reads them from /proc, on Linux"
}

func (w *watcher) start(goTest int) func() map[string]string {
	return func() map[string]string { return nil }
}
