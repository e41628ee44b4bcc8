package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nagent/nagent/internal/testbin"
	"github.com/nagent/nagent/runtime/sandbox"
)

func requireLocalSandbox(tb testing.TB) {
	tb.Helper()
	if err := (&sandbox.LocalBackend{}).Available(context.Background()); err != nil {
		msg := "local sandbox unavailable: " + err.Error()
		if os.Getenv("CI") != "" {
			tb.Fatal(msg + " (CI is set, so this test may not be skipped)")
		}
		tb.Skip(msg)
	}
}

// nagentCmd runs the real binary in NAGENT_HOME=dir.
func nagentCmd(tb testing.TB, dir, stdin string, args ...string) (code int, stdout, stderr string) {
	tb.Helper()
	cmd := exec.Command(testbin.Nagent(tb), args...)
	cmd.Env = append(os.Environ(), "NAGENT_HOME="+dir)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), errOut.String()
	} else if err != nil {
		tb.Fatal(err)
	}
	return 0, out.String(), errOut.String()
}

// TestSandboxCommand drives `nagent sandbox` through the real binary:
// exec, history, list, and a release across processes.
func TestSandboxCommand(t *testing.T) {
	requireLocalSandbox(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("sandbox:\n  backend: local\n"), 0o600)

	code, out, errOut := nagentCmd(t, dir, "print(6*7)\n", "sandbox", "exec", "--session", "demo", "-")
	if code != 0 || out != "42\n" {
		t.Fatalf("exec: %d %q %q", code, out, errOut)
	}
	code, out, errOut = nagentCmd(t, dir, "import nagent_tools\nprint(nagent_tools.get_current_time(timezone='UTC')['now'][:4])\n",
		"sandbox", "exec", "--session", "demo", "--json", "-")
	var res sandbox.Result
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil {
		t.Fatalf("exec --json: %d %q %q %v", code, out, errOut, err)
	}
	if res.Seq != 2 || len(res.CalledTools) != 1 || res.CalledTools[0].Status != "success" || len(res.Stdout) != 5 {
		t.Errorf("exec --json result = %+v", res)
	}
	file := filepath.Join(t.TempDir(), "fail.py")
	os.WriteFile(file, []byte("import sys\nprint('to stderr', file=sys.stderr)\nsys.exit(4)\n"), 0o600)
	code, _, errOut = nagentCmd(t, dir, "", "sandbox", "exec", "--session", "demo", file)
	if code != 1 || !strings.Contains(errOut, "to stderr") || !strings.Contains(errOut, "ended with error (exit code 4)") {
		t.Errorf("failing exec: %d %q", code, errOut)
	}

	code, out, _ = nagentCmd(t, dir, "", "sandbox", "history", "--session", "demo", "--json")
	var hist struct {
		History []struct {
			Seq        int    `json:"seq"`
			ExitReason string `json:"exit_reason"`
			CodeSHA256 string `json:"code_sha256"`
		} `json:"history"`
	}
	if err := json.Unmarshal([]byte(out), &hist); code != 0 || err != nil || len(hist.History) != 3 {
		t.Fatalf("history: %d %q %v", code, out, err)
	}
	if h := hist.History[0]; h.Seq != 3 || h.ExitReason != "error" || len(h.CodeSHA256) != 64 {
		t.Errorf("newest history row = %+v", h)
	}

	// A long execution in one process; list, a refused second exec, and a
	// forced release from other processes.
	long := exec.Command(testbin.Nagent(t), "sandbox", "exec", "--session", "held", "--timeout", "2m", "-")
	long.Env = append(os.Environ(), "NAGENT_HOME="+dir)
	long.Stdin = strings.NewReader("import time\nopen('/scratch/started', 'w').write('1')\ntime.sleep(110)\n")
	var longErr bytes.Buffer
	long.Stderr = &longErr
	if err := long.Start(); err != nil {
		t.Fatal(err)
	}
	longDone := make(chan error, 1)
	go func() { longDone <- long.Wait() }()
	t.Cleanup(func() { long.Process.Kill() })
	marker := filepath.Join(dir, "sandboxes", "held", "calls", "1", "started")
	for deadline := time.Now().Add(60 * time.Second); ; {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the long execution never started: %s", longErr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	code, out, _ = nagentCmd(t, dir, "", "sandbox", "list", "--json")
	var list struct {
		Sandboxes []struct {
			SessionID string `json:"session_id"`
			State     string `json:"state"`
			Owner     string `json:"owner"`
			Stale     bool   `json:"stale"`
		} `json:"sandboxes"`
	}
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || len(list.Sandboxes) != 1 {
		t.Fatalf("list: %d %q %v", code, out, err)
	}
	if s := list.Sandboxes[0]; s.SessionID != "held" || s.State != "executing" || s.Stale || !strings.HasSuffix(s.Owner, ":"+itoa(long.Process.Pid)) {
		t.Errorf("live sandbox = %+v (pid %d)", s, long.Process.Pid)
	}
	code, _, errOut = nagentCmd(t, dir, "print(1)\n", "sandbox", "exec", "--session", "held", "-")
	if code != 1 || !strings.Contains(errOut, "held by another nagent process") {
		t.Errorf("second exec of a held session: %d %q", code, errOut)
	}
	start := time.Now()
	code, out, errOut = nagentCmd(t, dir, "", "sandbox", "release", "--session", "held", "--force")
	if code != 0 || !strings.Contains(out, "released the sandbox of session held") {
		t.Fatalf("release: %d %q %q", code, out, errOut)
	}
	select {
	case <-longDone:
	case <-time.After(60 * time.Second):
		t.Fatal("the held execution did not end after a forced release")
	}
	if !strings.Contains(longErr.String(), "ended with killed") {
		t.Errorf("held exec stderr = %q", longErr.String())
	}
	t.Logf("forced release across processes took %s", time.Since(start))

	code, out, _ = nagentCmd(t, dir, "", "sandbox", "list", "--released", "--json")
	var rel struct {
		Released []struct {
			SessionID string `json:"session_id"`
			Reason    string `json:"reason"`
			Forced    bool   `json:"forced"`
		} `json:"released_sandboxes"`
	}
	if err := json.Unmarshal([]byte(out), &rel); code != 0 || err != nil || len(rel.Released) != 4 {
		t.Fatalf("list --released: %d %q %v", code, out, err)
	}
	if r := rel.Released[0]; r.SessionID != "held" || r.Reason != "manual" || !r.Forced {
		t.Errorf("newest release row = %+v", r)
	}
	if code, _, errOut := nagentCmd(t, dir, "", "sandbox", "--help"); code != 0 || !strings.Contains(errOut, "nagent sandbox exec --session demo -") {
		t.Errorf("--help: %d %q", code, errOut)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
