//go:build linux

package sandbox

import (
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

func TestStartConfinedSetsLimitsBeforeTheFirstInstruction(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "ulimit -n; ulimit -t")
	var out strings.Builder
	cmd.Stdout = &out
	err := startConfined(cmd, nil, []rlimit{{syscall.RLIMIT_NOFILE, 33}, {syscall.RLIMIT_CPU, 7}})
	if errors.Is(err, errPtrace) {
		t.Skipf("ptrace unavailable here (traced?): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "33\n7\n" {
		t.Fatalf("limits seen by the child = %q, want 33 and 7", got)
	}
}

func TestStartConfinedKillsTheChildWhenConfiningFails(t *testing.T) {
	cmd := exec.Command("/bin/sleep", "60")
	err := startConfined(cmd, []string{"/nonexistent/cgroup.procs"}, nil)
	if errors.Is(err, errPtrace) {
		t.Skipf("ptrace unavailable here (traced?): %v", err)
	}
	if err == nil || !strings.Contains(err.Error(), "join cgroup") {
		t.Fatalf("err = %v, want a join cgroup error", err)
	}
	if cmd.ProcessState == nil {
		t.Fatal("the child was not reaped")
	}
	if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child status = %v, want killed by SIGKILL before it ran", cmd.ProcessState)
	}
}
