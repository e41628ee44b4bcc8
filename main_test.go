package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nagent/nagent/internal/testbin"
	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/llm/scripted"
)

// nagent runs the real binary with a data directory and the scripted model.
type nagent struct {
	bin, home string
	model     *scripted.Server
}

func newNagent(tb testing.TB, replies ...scripted.Reply) *nagent {
	tb.Helper()
	model := scripted.Start(replies...)
	tb.Cleanup(model.Close)
	return &nagent{bin: testbin.Nagent(tb), home: tb.TempDir(), model: model}
}

func (n *nagent) env() []string {
	return append(os.Environ(),
		"NAGENT_HOME="+n.home,
		"NAGENT_LLM_BASE_URL="+n.model.URL(),
		"NAGENT_LLM_MODEL=scripted-model",
		"NAGENT_LLM_API_KEY=sk-secret-should-never-print",
		"OPENAI_API_KEY=", "OPENAI_BASE_URL=",
	)
}

// run executes nagent with args and stdin, returning stdout, stderr and the exit code.
func (n *nagent) run(tb testing.TB, stdin string, args ...string) (string, string, int) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, n.bin, args...)
	cmd.Env = n.env()
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else if err != nil {
		tb.Fatal(err)
	}
	if strings.Contains(out.String()+errb.String(), "sk-secret-should-never-print") {
		tb.Errorf("nagent %v printed the API key", args)
	}
	return out.String(), errb.String(), code
}

func TestRunJSONAndSessionCommands(t *testing.T) {
	n := newNagent(t,
		scripted.Reply{ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "get_current_time", Arguments: `{"timezone":"UTC"}`}}},
		scripted.Reply{Content: "It is 15:52 UTC."},
	)
	out, stderr, code := n.run(t, "", "run", "--json", "What time is it?")
	if code != 0 {
		t.Fatalf("run exit %d: %s", code, stderr)
	}
	var res struct {
		SessionID  string    `json:"session_id"`
		Content    string    `json:"content"`
		Status     string    `json:"status"`
		Iterations int       `json:"iterations"`
		Usage      llm.Usage `json:"usage"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("run --json output %q: %v", out, err)
	}
	if res.Content != "It is 15:52 UTC." || res.Status != "completed" || res.Iterations != 2 || res.SessionID == "" || res.Usage.TotalTokens == 0 {
		t.Errorf("run --json = %+v", res)
	}

	// A separate process reads the same file: the session survived the first one.
	out, _, code = n.run(t, "", "session", "list", "--json")
	if code != 0 || !strings.Contains(out, res.SessionID) {
		t.Errorf("session list --json (exit %d) = %s", code, out)
	}
	out, _, code = n.run(t, "", "session", "show", "--json", res.SessionID)
	if code != 0 {
		t.Fatalf("session show exit %d", code)
	}
	var detail struct {
		Session struct {
			Source string `json:"source"`
		} `json:"session"`
		Messages []struct {
			Role       string         `json:"role"`
			Content    string         `json:"content"`
			ToolCalls  []llm.ToolCall `json:"tool_calls"`
			ToolCallID string         `json:"tool_call_id"`
			Name       string         `json:"name"`
		} `json:"messages"`
		ToolCalls []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
			Result string `json:"result"`
		} `json:"tool_calls"`
		TaskState struct {
			Status         string `json:"status"`
			IterationCount int    `json:"iteration_count"`
		} `json:"task_state"`
		Summary string `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out), &detail); err != nil {
		t.Fatalf("session show --json: %v\n%s", err, out)
	}
	if len(detail.Messages) != 4 || detail.Messages[1].ToolCalls[0].Name != "get_current_time" ||
		detail.Messages[2].ToolCallID != "call_1" || detail.Messages[2].Name != "get_current_time" {
		t.Errorf("messages = %+v", detail.Messages)
	}
	if len(detail.ToolCalls) != 1 || detail.ToolCalls[0].Status != "success" || !strings.Contains(detail.ToolCalls[0].Result, `"now"`) {
		t.Errorf("tool calls = %+v", detail.ToolCalls)
	}
	if detail.TaskState.Status != "completed" || detail.TaskState.IterationCount != 2 || detail.Session.Source != "cli" {
		t.Errorf("task state = %+v, source %q", detail.TaskState, detail.Session.Source)
	}
	if detail.Summary != "用户: What time is it? | 助手: It is 15:52 UTC." {
		t.Errorf("summary = %q", detail.Summary)
	}

	// Human output too.
	out, _, _ = n.run(t, "", "session", "show", res.SessionID)
	if !strings.Contains(out, "get_current_time") || !strings.Contains(out, "task: completed after 2 model call(s)") {
		t.Errorf("session show =\n%s", out)
	}

	// Continue the session with --session: the model sees the history.
	n.model.Enqueue(scripted.Reply{Content: "You asked about the time."})
	out, _, code = n.run(t, "", "run", "--session", res.SessionID, "What did I ask?")
	if code != 0 || strings.TrimSpace(out) != "You asked about the time." {
		t.Errorf("run --session (exit %d) = %q", code, out)
	}
	reqs := n.model.Requests()
	if got := len(reqs[len(reqs)-1].Messages); got != 6 { // system + 4 stored + new user
		t.Errorf("continued turn sent %d messages, want 6", got)
	}

	out, _, code = n.run(t, "", "session", "delete", res.SessionID)
	if code != 0 || !strings.Contains(out, "deleted") {
		t.Errorf("delete (exit %d) = %q", code, out)
	}
	_, stderr, code = n.run(t, "", "session", "show", res.SessionID)
	if code != 1 || !strings.Contains(stderr, "not found") {
		t.Errorf("show deleted (exit %d) = %q", code, stderr)
	}
}

func TestRunFailureExitCode(t *testing.T) {
	n := newNagent(t)
	n.model.SetResponder(func(scripted.RecordedRequest) scripted.Reply {
		return scripted.Reply{Status: 503, ErrorMessage: "overloaded"}
	})
	cfg := "llm:\n  max_attempts: 2\n  retry_base_delay: 1ms\n"
	if err := os.WriteFile(filepath.Join(n.home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := n.run(t, "", "run", "--json", "hello")
	if code != 1 {
		t.Errorf("exit = %d, want 1", code)
	}
	if !strings.Contains(out, `"status": "failed"`) || !strings.Contains(out, "HTTP 503") || !strings.Contains(out, "overloaded") {
		t.Errorf("output = %s (stderr %s)", out, stderr)
	}
	if len(n.model.Requests()) != 2 {
		t.Errorf("attempts = %d, want 2", len(n.model.Requests()))
	}
}

func TestMissingModelSettingIsNamed(t *testing.T) {
	n := newNagent(t)
	cmd := exec.Command(n.bin, "run", "hi")
	cmd.Env = append(os.Environ(), "NAGENT_HOME="+n.home, "NAGENT_LLM_BASE_URL=", "OPENAI_BASE_URL=", "NAGENT_LLM_MODEL=")
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "llm.model") || !strings.Contains(string(out), "NAGENT_LLM_MODEL") {
		t.Errorf("output = %s", out)
	}
}

func TestChatStreamsAndShowsTools(t *testing.T) {
	n := newNagent(t,
		scripted.Reply{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "get_current_time", Arguments: `{}`}}},
		scripted.Reply{Content: "It is 15:52 UTC.", ChunkSize: 2},
		scripted.Reply{Content: "Goodbye."},
	)
	out, stderr, code := n.run(t, "What time is it?\n/session\nthanks\n/exit\n", "chat", "--session", "chat-1")
	if code != 0 {
		t.Fatalf("chat exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"session chat-1",
		"[tool] get_current_time {}",
		"[tool] get_current_time -> success",
		"It is 15:52 UTC.",
		"chat-1\n",
		"Goodbye.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("chat output lacks %q:\n%s", want, out)
		}
	}
	for _, r := range n.model.Requests() {
		if !r.Stream {
			t.Error("chat did not stream")
		}
	}
}

func TestChatAsksBeforeAConfirmedCall(t *testing.T) {
	call := scripted.Reply{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "get_current_time", Arguments: `{}`}}}
	n := newNagent(t, call, scripted.Reply{Content: "Approved."}, call, scripted.Reply{Content: "Refused."})
	if err := os.MkdirAll(filepath.Join(n.home, "policies"), 0o700); err != nil {
		t.Fatal(err)
	}
	rule := "package nagent.tools\n\nconfirm contains \"clock reads need approval\" if input.tool.name == \"get_current_time\"\n"
	if err := os.WriteFile(filepath.Join(n.home, "policies", "confirm_clock.rego"), []byte(rule), 0o600); err != nil {
		t.Fatal(err)
	}
	// The first call is approved with "y"; the second gets a bare Enter,
	// which must deny.
	out, stderr, code := n.run(t, "time?\ny\nagain?\n\n/exit\n", "chat", "--session", "chat-confirm")
	if code != 0 {
		t.Fatalf("chat exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"[confirm] get_current_time {}",
		"policy: clock reads need approval",
		"Allow this call? [y/N]",
		"[tool] get_current_time -> success",
		"[tool] get_current_time -> denied",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("chat output lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "-> success") > strings.Index(out, "-> denied") {
		t.Errorf("approval and denial out of order:\n%s", out)
	}
}

func TestHelpTeaches(t *testing.T) {
	n := newNagent(t)
	for _, args := range [][]string{{"--help"}, {"run", "--help"}, {"chat", "--help"}, {"session", "--help"}, {"serve", "--help"}} {
		out, stderr, code := n.run(t, "", args...)
		if code != 0 || !strings.Contains(out+stderr, "Usage: nagent") {
			t.Errorf("nagent %v (exit %d):\n%s%s", args, code, out, stderr)
		}
	}
	_, stderr, code := n.run(t, "", "frobnicate")
	if code != 2 || !strings.Contains(stderr, `unknown command "frobnicate"`) {
		t.Errorf("unknown command (exit %d): %s", code, stderr)
	}
}

func TestServeRefusesOpenAddressWithoutKeys(t *testing.T) {
	n := newNagent(t)
	_, stderr, code := n.run(t, "", "serve", "--addr", "0.0.0.0:0")
	if code == 0 || !strings.Contains(stderr, "without API keys") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// startServe runs `nagent serve` and waits until it is ready.
func (n *nagent) startServe(tb testing.TB, extraEnv ...string) (*exec.Cmd, string, *bytes.Buffer) {
	tb.Helper()
	addr := testbin.FreeAddr(tb)
	cmd := exec.Command(n.bin, "serve", "--addr", addr)
	cmd.Env = append(n.env(), extraEnv...)
	var logs bytes.Buffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("server not ready: %v\n%s", err, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return cmd, "http://" + addr, &logs
}

func TestGracefulShutdown(t *testing.T) {
	t.Run("InFlightTurnFinishes", func(t *testing.T) {
		n := newNagent(t, scripted.Reply{Content: "finished in time", Delay: 500 * time.Millisecond})
		os.WriteFile(filepath.Join(n.home, "config.yaml"), []byte("server:\n  shutdown_grace: 5s\n"), 0o600)
		cmd, url, logs := n.startServe(t)
		done := make(chan string)
		go func() {
			resp, err := http.Post(url+"/v1/chat/completions", "application/json",
				strings.NewReader(`{"model":"scripted-model","messages":[{"role":"user","content":"hi"}]}`))
			if err != nil {
				done <- err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			done <- string(b)
		}()
		waitUntil(t, func() bool { return len(n.model.Requests()) == 1 })
		cmd.Process.Signal(syscall.SIGTERM)
		if body := <-done; !strings.Contains(body, "finished in time") {
			t.Errorf("in-flight response = %s", body)
		}
		if err := cmd.Wait(); err != nil {
			t.Errorf("serve exit: %v\n%s", err, logs)
		}
	})
	t.Run("GraceOverCancelsAndRecords", func(t *testing.T) {
		n := newNagent(t, scripted.Reply{Content: "too slow", Delay: 30 * time.Second})
		os.WriteFile(filepath.Join(n.home, "config.yaml"), []byte("server:\n  shutdown_grace: 200ms\n"), 0o600)
		cmd, url, logs := n.startServe(t)
		go func() {
			req, _ := http.NewRequest("POST", url+"/v1/chat/completions",
				strings.NewReader(`{"model":"scripted-model","messages":[{"role":"user","content":"hi"}]}`))
			req.Header.Set("X-Session-Id", "slow")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		waitUntil(t, func() bool { return len(n.model.Requests()) == 1 })
		start := time.Now()
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("serve exit: %v\n%s", err, logs)
		}
		if time.Since(start) > 20*time.Second {
			t.Errorf("shutdown took %s", time.Since(start))
		}
		out, _, _ := n.run(t, "", "session", "show", "--json", "slow")
		if !strings.Contains(out, `"status": "cancelled"`) || !strings.Contains(out, `"content": "hi"`) {
			t.Errorf("after shutdown the session is:\n%s", out)
		}
	})
}

func waitUntil(tb testing.TB, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatal(fmt.Errorf("condition not met in 15s"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
