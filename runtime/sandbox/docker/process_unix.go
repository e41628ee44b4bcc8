//go:build unix

package docker

import (
	"errors"
	"syscall"
)

// processAlive reports whether pid names a running process of this host.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
