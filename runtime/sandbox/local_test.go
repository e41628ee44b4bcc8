//go:build linux

package sandbox_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/sandbox"
	"github.com/nagent/nagent/runtime/sandbox/sandboxtest"
)

// requireLocal skips when bubblewrap cannot run here, except under CI,
// which installs it and must never skip.
func requireLocal(tb testing.TB) *sandbox.LocalBackend {
	tb.Helper()
	b := &sandbox.LocalBackend{}
	if err := b.Available(context.Background()); err != nil {
		msg := "local sandbox unavailable: " + err.Error()
		if os.Getenv("CI") != "" {
			tb.Fatal(msg + " (CI is set, so this test may not be skipped)")
		}
		tb.Skip(msg)
	}
	return b
}

func TestLocalEscape(t *testing.T) {
	b := requireLocal(t)
	// Outside a tracer (strace makes PTRACE_TRACEME fail) the local backend
	// starts bwrap directly, confined before its first instruction.
	if !sandbox.LocalLaunchMode(b) && !traced() {
		t.Error("the local backend fell back to the /bin/sh wrapper although this process is not traced; ptrace(PTRACE_TRACEME) should work here")
	}
	sandboxtest.RunEscapeSuite(t, func(t *testing.T) sandbox.Backend { return requireLocal(t) })
}

// TestLocalEscapeShellWrapper runs the escape suite on the fallback launch
// (a /bin/sh wrapper joins the cgroups and sets the rlimits), used where
// ptrace is unavailable.
func TestLocalEscapeShellWrapper(t *testing.T) {
	requireLocal(t)
	sandboxtest.RunEscapeSuite(t, func(t *testing.T) sandbox.Backend {
		b := requireLocal(t)
		if err := sandbox.WithShellWrapper(context.Background(), b); err != nil {
			t.Fatal(err)
		}
		return b
	})
}

// traced reports whether a tracer (strace, a debugger) is attached.
func traced() bool {
	data, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "TracerPid:"); ok {
			return strings.TrimSpace(v) != "0"
		}
	}
	return false
}

// TestLocalHardening checks what the local backend adds beyond the shared
// escape suite: no capabilities, no_new_privs, no nested user namespaces
// (a path to in-namespace capabilities and more kernel surface), its own
// hostname, and a read-only root.
func TestLocalHardening(t *testing.T) {
	h := sandboxtest.NewHarness(t, requireLocal(t), sandbox.Options{})
	res := h.Exec(t, "hard", `
import ctypes, os, socket
st = {l.split(":")[0]: l.split(":")[1].strip() for l in open("/proc/self/status")}
print("CapEff", st["CapEff"], "CapBnd", st["CapBnd"], "NoNewPrivs", st["NoNewPrivs"])
libc = ctypes.CDLL(None, use_errno=True)
print("unshare_user", libc.unshare(0x10000000))
print("hostname", socket.gethostname())
try:
    open("/newfile", "w"); print("root writable")
except OSError:
    print("root read-only")
`, time.Minute, 0)
	want := []string{"CapEff 0000000000000000 CapBnd 0000000000000000 NoNewPrivs 1", "unshare_user -1", "hostname sandbox", "root read-only"}
	for _, w := range want {
		if !strings.Contains(res.Stdout, w) {
			t.Errorf("missing %q in:\n%s%s", w, res.Stdout, res.Stderr)
		}
	}
}
