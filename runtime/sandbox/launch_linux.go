//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"
)

// rlimit is one resource limit, soft and hard alike.
type rlimit struct {
	resource int
	value    uint64
}

// startConfined starts cmd (bwrap) so that it is in the session's cgroups
// and under the rlimits before it runs a single instruction of its own,
// without a shell in between: the child is started under ptrace, which
// stops it right after execve; the parent writes its pid into each
// cgroup.procs file, sets the rlimits with prlimit, and detaches. Every
// process of the sandbox descends from it, so all inherit both.
//
// This costs one fork+exec less than a /bin/sh wrapper that joins the
// groups, runs ulimit and execs bwrap (a few ms per execution on a loaded
// machine). On any failure the child is killed and reaped, and the caller
// gets an error; errPtrace marks a failure of ptrace itself, after which
// the caller may fall back to the shell wrapper.
func startConfined(cmd *exec.Cmd, procs []string, limits []rlimit) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Ptrace = true
	// ptrace requests must come from the thread that forked the child.
	// The thread survives (Unlock before return), which also keeps
	// Pdeathsig, tied to that thread, from firing.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%w: %w", errPtrace, err)
	}
	pid := cmd.Process.Pid
	fail := func(err error) error {
		syscall.Kill(pid, syscall.SIGKILL)
		cmd.Wait()
		return err
	}
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pid, &ws, syscall.WALL, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return fail(fmt.Errorf("wait for the exec stop: %w", err))
		}
		break
	}
	if !ws.Stopped() {
		// Exited or killed before its first instruction (its status is
		// consumed): nothing ran.
		cmd.Process.Release()
		return fmt.Errorf("%w: the child did not stop at exec (status %#x)", errPtrace, uint32(ws))
	}
	if ws.StopSignal() != syscall.SIGTRAP {
		return fail(fmt.Errorf("%w: the child stopped with %v, not at exec", errPtrace, ws.StopSignal()))
	}
	for _, p := range procs {
		if err := os.WriteFile(p, []byte(strconv.Itoa(pid)), 0); err != nil {
			return fail(fmt.Errorf("join cgroup %s: %w", p, err))
		}
	}
	for _, l := range limits {
		lim := syscall.Rlimit{Cur: l.value, Max: l.value}
		if _, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), uintptr(l.resource), uintptr(unsafe.Pointer(&lim)), 0, 0, 0); e != 0 {
			return fail(fmt.Errorf("set rlimit %d: %w", l.resource, e))
		}
	}
	if err := syscall.PtraceDetach(pid); err != nil {
		return fail(fmt.Errorf("detach: %w", err))
	}
	return nil
}

// errPtrace marks a launch that failed because ptrace is unavailable.
var errPtrace = errors.New("ptrace launch failed")
