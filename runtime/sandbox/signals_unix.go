//go:build unix

package sandbox

import "syscall"

// signalReason maps the signal that ended a program to an exit reason.
func signalReason(sig syscall.Signal) ExitReason {
	switch sig {
	case syscall.SIGXCPU, syscall.SIGXFSZ:
		return ExitLimit
	case syscall.SIGKILL:
		// Not killed by us (that is decided by the caller): the OOM killer
		// or the CPU hard limit.
		return ExitOOM
	case syscall.SIGSEGV, syscall.SIGBUS:
		return ExitOOM
	default:
		return ExitError
	}
}
