// Package syncbuf is a text buffer safe for concurrent use, for tests that
// read what a logger or a program writes while it runs.
package syncbuf

import (
	"strings"
	"sync"
)

// Buffer collects what is written to it. Its zero value is ready to use.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write appends p; it never fails.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns all that was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
