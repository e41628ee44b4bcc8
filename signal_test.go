package main_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/llm/scripted"
)

// A signal to `nagent run` cancels the turn: the session records it as
// cancelled (not stuck "running") and the command exits 130.
func TestRunSignalCancelsTurn(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			n := newNagent(t, scripted.Reply{Content: "too late", Delay: time.Minute})
			cmd := exec.Command(n.bin, "run", "--session", "interrupted", "a slow question")
			cmd.Env = n.env()
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill() })
			waitUntil(t, func() bool { return len(n.model.Requests()) == 1 })
			start := time.Now()
			cmd.Process.Signal(sig)
			err := cmd.Wait()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 130 {
				t.Fatalf("run after %s: %v, want exit 130; stderr:\n%s", sig, err, stderr.String())
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("run took %s to stop", d)
			}
			// Flags after the id are flags (the trial's `session show ID --json`).
			out, errOut, code := n.run(t, "", "session", "show", "interrupted", "--json")
			if code != 0 {
				t.Fatalf("session show: exit %d: %s", code, errOut)
			}
			var detail struct {
				TaskState struct {
					Status string `json:"status"`
				} `json:"task_state"`
			}
			if err := json.Unmarshal([]byte(out), &detail); err != nil || detail.TaskState.Status != "cancelled" {
				t.Errorf("task state after %s = %q (%v), want cancelled:\n%s", sig, detail.TaskState.Status, err, out)
			}
		})
	}
}

// The trial's nits in serve's logs and the help texts.
func TestServeLogsAndHelpTrial(t *testing.T) {
	n := newNagent(t)
	cmd, _, logs := n.startServe(t, "NAGENT_LLM_MODEL=")
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve exit: %v\n%s", err, logs)
	}
	for _, want := range []string{"until one is configured and nagent serve is restarted", `"tick":"1s"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("serve logs lack %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs.String(), "cancelling runs") {
		t.Errorf("serve warned about runs with none running:\n%s", logs)
	}

	var helpTests = []struct {
		args []string
		want string
	}{
		{[]string{"--help"}, "OpenAI-compatible API and the browser dashboard"},
		{[]string{"session"}, "session list [--source S]"},
		{[]string{"serve", "--help"}, "X-Session-Id"},
	}
	for _, tt := range helpTests {
		out, stderr, _ := n.run(t, "", tt.args...)
		if !strings.Contains(out+stderr, tt.want) {
			t.Errorf("nagent %q lacks %q:\n%s%s", tt.args, tt.want, out, stderr)
		}
		for _, line := range strings.Split(out+stderr, "\n") {
			if len([]rune(line)) > 80 && !strings.HasPrefix(line, "    \t") {
				t.Errorf("nagent %q: line over 80 columns: %q", tt.args, line)
			}
		}
	}
}
