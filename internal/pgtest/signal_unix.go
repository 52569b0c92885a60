//go:build unix

package pgtest

import (
	"errors"
	"fmt"
	"syscall"
)

// Signal sends sig to every process of the server (see Pids): SIGSTOP
// makes a server that hangs, every call waiting, as a stalled machine
// or a partition that drops packets would; SIGCONT resumes it.
func (s *Server) Signal(sig syscall.Signal) error {
	pids, err := s.Pids()
	if err != nil {
		return err
	}
	var errs []error
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil {
			errs = append(errs, fmt.Errorf("kill %d: %w", pid, err))
		}
	}
	return errors.Join(errs...)
}
