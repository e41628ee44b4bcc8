package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nagent/nagent/adapters/cli"
	"github.com/nagent/nagent/store"
)

// runPolicy runs `nagent policy args...` in a fresh NAGENT_HOME.
func runPolicy(tb testing.TB, stdin string, args ...string) (code int, stdout, stderr string) {
	tb.Helper()
	var out, errOut bytes.Buffer
	code = cli.Policy(context.Background(), args, cli.IO{In: strings.NewReader(stdin), Out: &out, Err: &errOut})
	return code, out.String(), errOut.String()
}

func home(tb testing.TB) string {
	tb.Helper()
	dir := tb.TempDir()
	tb.Setenv("NAGENT_HOME", dir)
	return dir
}

func write(tb testing.TB, path, body string) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		tb.Fatal(err)
	}
}

const cronEmail = `{"phase": "call",
 "tool": {"name": "send_email", "source_type": "mcp", "risk_level": "high", "managed": false, "disabled": false},
 "args": {"to": "ops@example.com"}, "session": {"id": "s1", "source": "cron"},
 "agent_context": "cron", "tool_exposure_policy": "default", "execution_context_mode": "",
 "trusted_metadata": {}, "permitted_managed_tools": [], "time": "2026-06-27T15:52:06Z"}`

func TestPolicyCommand(t *testing.T) {
	t.Run("Usage", func(t *testing.T) {
		home(t)
		if code, _, errOut := runPolicy(t, ""); code != cli.ExitUsage || !strings.Contains(errOut, "check [DIR]") {
			t.Errorf("no subcommand: %d %q", code, errOut)
		}
		for _, sub := range []string{"check", "test", "eval", "decisions"} {
			code, _, errOut := runPolicy(t, "", sub, "--help")
			if code != cli.ExitOK || !strings.Contains(errOut, "Example") && !strings.Contains(errOut, "test_") {
				t.Errorf("%s --help: %d %q", sub, code, errOut)
			}
		}
	})
	t.Run("CheckDefaultDir", func(t *testing.T) {
		h := home(t)
		write(t, filepath.Join(h, "policies", "clock.rego"), "package nagent.tools\n\ndeny contains \"no\" if input.tool.name == \"x\"\n")
		code, out, errOut := runPolicy(t, "", "check")
		if code != cli.ExitOK || !strings.Contains(out, "1 of them yours") || !strings.Contains(out, "revision: ") ||
			!strings.Contains(out, "expose decisions cached: yes") {
			t.Errorf("check: %d\n%s%s", code, out, errOut)
		}
	})
	t.Run("CheckBroken", func(t *testing.T) {
		home(t)
		dir := t.TempDir()
		write(t, filepath.Join(dir, "a.rego"), "package nagent.tools\n\ndeny contains \"x\" if count(1) > 0\n")
		code, _, errOut := runPolicy(t, "", "check", dir)
		if code != cli.ExitFailed || !strings.Contains(errOut, filepath.Join(dir, "a.rego")+":3: rego_type_error") {
			t.Errorf("check broken: %d %q", code, errOut)
		}
		code, out, _ := runPolicy(t, "", "check", "--json", dir)
		if code != cli.ExitFailed || !strings.Contains(out, `"line": 3`) {
			t.Errorf("check --json broken: %d %s", code, out)
		}
	})
	t.Run("Test", func(t *testing.T) {
		home(t)
		dir := t.TempDir()
		code, out, errOut := runPolicy(t, "", "test", dir)
		if code != cli.ExitOK || !strings.Contains(out, "PASS: ") {
			t.Errorf("built-in tests: %d\n%s%s", code, out, errOut)
		}
		write(t, filepath.Join(dir, "x_test.rego"), "package nagent.tools_test\n\ntest_fails if false\n")
		code, out, _ = runPolicy(t, "", "test", dir)
		if code != cli.ExitFailed || !strings.Contains(out, "test_fails: FAIL") {
			t.Errorf("failing test: %d\n%s", code, out)
		}
	})
	t.Run("Eval", func(t *testing.T) {
		h := home(t)
		in := filepath.Join(h, "call.json")
		write(t, in, cronEmail)
		code, out, errOut := runPolicy(t, "", "eval", "--input", in)
		var d struct {
			Allow, Confirm bool
			Reasons        []string
		}
		if code != cli.ExitOK || json.Unmarshal([]byte(out), &d) != nil || d.Allow ||
			len(d.Reasons) != 1 || !strings.Contains(d.Reasons[0], "no human can answer in a cron run") {
			t.Errorf("eval: %d %s %s", code, out, errOut)
		}
		// YAML on standard input, memory decision.
		code, out, errOut = runPolicy(t, "operation: add\nprovider: builtin\ntarget: memory.md\nagent_context: subagent\n", "eval", "--memory", "--input", "-")
		if code != cli.ExitOK || !strings.Contains(out, `"allow": false`) || !strings.Contains(out, "a subagent run cannot write builtin memory") {
			t.Errorf("eval --memory: %d %s %s", code, out, errOut)
		}
		// Fail closed: an undefined decision is a denial, exit 1.
		code, out, _ = runPolicy(t, `{"phase": "later"}`, "eval", "--input", "-")
		if code != cli.ExitFailed || !strings.Contains(out, `"allow": false`) {
			t.Errorf("eval undefined: %d %s", code, out)
		}
		if code, _, _ := runPolicy(t, "", "eval"); code != cli.ExitUsage {
			t.Errorf("eval without --input: %d", code)
		}
	})
	t.Run("Decisions", func(t *testing.T) {
		h := home(t)
		if code, out, _ := runPolicy(t, "", "decisions"); code != cli.ExitOK || !strings.Contains(out, "no policy decisions") {
			t.Errorf("empty trail: %d %q", code, out)
		}
		db, err := store.Open(context.Background(), filepath.Join(h, "nagent.db"))
		if err != nil {
			t.Fatal(err)
		}
		at := time.Date(2026, 6, 27, 15, 52, 6, 0, time.UTC)
		err = db.SavePolicyDecisions(context.Background(), []store.PolicyDecision{
			{CreatedAt: at, SessionID: "s1", Tool: "get_current_time", Phase: "call", Allow: true, Revision: "r1", EvalMicros: 20},
			{CreatedAt: at, SessionID: "s2", Tool: "send_email", Phase: "call", Reasons: []string{"no human can answer"}, Revision: "r1", EvalMicros: 25,
				Arguments: json.RawMessage(`{"password":"[REDACTED]"}`)},
		})
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
		code, out, _ := runPolicy(t, "", "decisions")
		if code != cli.ExitOK || !strings.Contains(out, "send_email") || !strings.Contains(out, "deny") || !strings.Contains(out, "get_current_time") {
			t.Errorf("decisions: %d\n%s", code, out)
		}
		code, out, _ = runPolicy(t, "", "decisions", "--session", "s2", "--json")
		var got struct{ Decisions []store.PolicyDecision }
		if code != cli.ExitOK || json.Unmarshal([]byte(out), &got) != nil || len(got.Decisions) != 1 ||
			got.Decisions[0].Tool != "send_email" || !strings.Contains(string(got.Decisions[0].Arguments), "REDACTED") {
			t.Errorf("decisions --session --json: %d %s", code, out)
		}
	})
}
