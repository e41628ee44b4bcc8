//go:build unix

package acp

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// guardStdout keeps file descriptor 1 for the protocol alone: it returns a
// duplicate of it for protocol messages, then points descriptor 1 (and
// os.Stdout) at standard error, so a stray print anywhere in the process,
// or in a child that inherits it, lands in the log instead of the protocol
// stream.
func guardStdout() (*os.File, error) {
	fd, err := unix.Dup(1)
	if err != nil {
		return nil, fmt.Errorf("acp: keep stdout for the protocol: %w", err)
	}
	unix.CloseOnExec(fd)
	if err := unix.Dup2(2, 1); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("acp: point stdout at stderr: %w", err)
	}
	proto := os.NewFile(uintptr(fd), "acp-protocol")
	os.Stdout = os.Stderr
	return proto, nil
}
