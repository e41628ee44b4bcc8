//go:build unix

package sandbox

import (
	"errors"
	"syscall"
)

// processExists reports whether pid names a live process.
func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
