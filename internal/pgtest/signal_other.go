//go:build !unix

package pgtest

import (
	"errors"
	"syscall"
)

// Signal is not supported here: the tests that stop a server are Unix
// only.
func (s *Server) Signal(sig syscall.Signal) error {
	return errors.New("pgtest: Signal needs a Unix system")
}
