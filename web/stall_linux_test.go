package web_test

import "syscall"

// shrinkReceiveBuffer makes a stalled client's socket fill up after a few
// KiB instead of the kernel's auto-tuned megabytes.
func shrinkReceiveBuffer(network, address string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
	})
	if err != nil {
		return err
	}
	return serr
}
