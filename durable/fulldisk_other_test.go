//go:build !unix

package durable

import "errors"

// fullDiskChild needs a file size limit (RLIMIT_FSIZE), which only Unix
// systems have; TestFullDiskIsAnError runs there.
func fullDiskChild(string) error { return errors.New("no file size limit on this system") }
