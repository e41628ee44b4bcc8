package app_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/nagent/nagent/runtime/app"
	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/llm/scripted"
	"github.com/nagent/nagent/runtime/sandbox"
	"github.com/nagent/nagent/runtime/tools"
)

// requireLocalSandbox skips when bubblewrap cannot run here, except under
// CI, which installs it.
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

func executeCode(id, code string) llm.ToolCall {
	args, _ := json.Marshal(map[string]string{"code": code})
	return llm.ToolCall{ID: id, Name: tools.ExecuteCodeTool, Arguments: string(args)}
}

// TestExecuteCodeThroughLoop drives execute_code through the agent loop
// with the scripted model: print(42); a second call in the same session
// reuses the sandbox and calls get_current_time back over the socket.
func TestExecuteCodeThroughLoop(t *testing.T) {
	requireLocalSandbox(t)
	srv := scripted.Start(
		scripted.Reply{ToolCalls: []llm.ToolCall{executeCode("call_1", "print(6*7)")}},
		scripted.Reply{Content: "It printed 42."},
		scripted.Reply{ToolCalls: []llm.ToolCall{executeCode("call_2", "import nagent_tools\nprint(nagent_tools.get_current_time()['now'])")}},
		scripted.Reply{Content: "Done."},
	)
	defer srv.Close()
	cfg := testConfig(t, srv)
	cfg.Sandbox.Backend = "local"
	a := MustNewApp(t, cfg)
	if a.Sandbox == nil || a.Sandbox.Backend().Name() != "local" {
		t.Fatalf("app.Sandbox = %v, want the local backend", a.Sandbox)
	}
	ctx := context.Background()

	res, err := a.Chat.Complete(ctx, userTurn("sbx", "compute 6*7 in python"))
	if err != nil || res.Status != "completed" {
		t.Fatalf("turn 1 = %+v, %v", res, err)
	}
	if tools := srv.Requests()[0].Tools; !slices.ContainsFunc(tools, func(s llm.ToolSpec) bool { return s.Name == "execute_code" }) {
		t.Fatalf("execute_code not offered to the model: %+v", tools)
	}
	first := toolResultOf(t, srv.Requests()[1].Messages, "call_1")
	if first.ExitReason != "ok" || first.Stdout != "42\n" || first.Reused || first.Sandbox != "local" {
		t.Fatalf("first execute_code result = %+v", first)
	}

	res, err = a.Chat.Complete(ctx, userTurn("sbx", "what time is it, from python?"))
	if err != nil || res.Status != "completed" {
		t.Fatalf("turn 2 = %+v, %v", res, err)
	}
	second := toolResultOf(t, srv.Requests()[3].Messages, "call_2")
	if second.ExitReason != "ok" || !second.Reused || strings.TrimSpace(second.Stdout) != "2026-06-27T15:52:06.344631+00:00" {
		t.Fatalf("second execute_code result = %+v", second)
	}
	if len(second.ToolCalls) != 1 || second.ToolCalls[0].Name != "get_current_time" || second.ToolCalls[0].Status != "success" {
		t.Errorf("callbacks = %+v", second.ToolCalls)
	}

	hist, err := a.Sandbox.History(ctx, "sbx", 10)
	if err != nil || len(hist) != 2 {
		t.Fatalf("history = %d rows, %v", len(hist), err)
	}
	if h := hist[0]; h.Status != "success" || !strings.Contains(string(h.CalledTools), "get_current_time") || !slices.Contains(h.AllowedTools, "get_current_time") {
		t.Errorf("history row = %+v", h)
	}
	calls, err := a.DB.ListToolCalls(ctx, "sbx")
	if err != nil || len(calls) != 2 || calls[0].Status != "success" {
		t.Fatalf("tool call records = %+v, %v", calls, err)
	}
	if list := a.Sandbox.List(); len(list) != 1 || list[0].Executions != 2 || list[0].State != sandbox.StateActive {
		t.Errorf("List = %+v", list)
	}
}

// TestExecuteCodeFailureIsToolError: code that fails, and a timeout,
// become ToolResult(error) and the loop goes on.
func TestExecuteCodeFailureIsToolError(t *testing.T) {
	requireLocalSandbox(t)
	args, _ := json.Marshal(map[string]any{"code": "while True: pass", "timeout_seconds": 1})
	srv := scripted.Start(
		scripted.Reply{ToolCalls: []llm.ToolCall{executeCode("c1", "raise ValueError('boom')"), {ID: "c2", Name: "execute_code", Arguments: string(args)}}},
		scripted.Reply{Content: "Both failed."},
	)
	defer srv.Close()
	cfg := testConfig(t, srv)
	cfg.Sandbox.Backend = "local"
	a := MustNewApp(t, cfg)
	res, err := a.Chat.Complete(context.Background(), userTurn("fail", "go"))
	if err != nil || res.Status != "completed" || res.Content != "Both failed." {
		t.Fatalf("turn = %+v, %v", res, err)
	}
	calls, err := a.DB.ListToolCalls(context.Background(), "fail")
	if err != nil || len(calls) != 2 {
		t.Fatalf("tool calls = %+v, %v", calls, err)
	}
	for _, c := range calls {
		if c.Status != "error" {
			t.Errorf("call %s status %s, want error", c.ID, c.Status)
		}
	}
	msgs := srv.Requests()[1].Messages
	if m := msgs[len(msgs)-2]; !strings.Contains(m.Content, "ValueError: boom") || !strings.Contains(m.Content, `"exit_reason":"error"`) {
		t.Errorf("first tool message = %s", m.Content)
	}
	if m := msgs[len(msgs)-1]; !strings.Contains(m.Content, `"exit_reason":"timeout"`) {
		t.Errorf("second tool message = %s", m.Content)
	}
}

// TestExecuteCodeExposurePolicy checks, against the real policy engine,
// that execute_code is hidden from safe_only runs and denied to cron and
// unattended runs.
func TestExecuteCodeExposurePolicy(t *testing.T) {
	requireLocalSandbox(t)
	srv := scripted.Start()
	defer srv.Close()
	cfg := testConfig(t, srv)
	cfg.Sandbox.Backend = "local"
	a := MustNewApp(t, cfg)
	ctx := context.Background()
	exposed := func(ec tools.ExecutionContext) bool {
		return slices.ContainsFunc(a.Tools.Definitions(ctx, ec), func(d tools.ToolDefinition) bool { return d.Name == tools.ExecuteCodeTool })
	}
	primary := tools.ExecutionContext{SessionID: "p", AgentContext: tools.AgentPrimary, ToolExposurePolicy: tools.ExposureDefault}
	if !exposed(primary) {
		t.Fatal("execute_code hidden from a primary default run")
	}
	cases := map[string]tools.ExecutionContext{
		"safe_only":  {SessionID: "p", AgentContext: tools.AgentPrimary, ToolExposurePolicy: tools.ExposureSafeOnly},
		"cron":       {SessionID: "p", AgentContext: tools.AgentCron, ToolExposurePolicy: tools.ExposureDefault},
		"unattended": {SessionID: "p", AgentContext: tools.AgentUnattended, ToolExposurePolicy: tools.ExposureDefault},
	}
	for name, ec := range cases {
		t.Run(name, func(t *testing.T) {
			if exposed(ec) {
				t.Error("execute_code exposed")
			}
			res := a.Tools.Execute(ctx, tools.ToolCallRequest{ID: "x", Name: tools.ExecuteCodeTool, Arguments: `{"code":"print(1)"}`}, ec)
			if res.Status != tools.StatusDenied {
				t.Errorf("call = %+v, want denied", res)
			}
		})
	}
	if n := len(a.Sandbox.List()); n != 0 {
		t.Errorf("a denied call created %d sandboxes", n)
	}
}

type executeCodeContent struct {
	ExitReason string               `json:"exit_reason"`
	Stdout     string               `json:"stdout"`
	Sandbox    string               `json:"sandbox"`
	Reused     bool                 `json:"reused"`
	ToolCalls  []sandbox.CalledTool `json:"tool_calls"`
}

func toolResultOf(tb testing.TB, msgs []llm.Message, callID string) executeCodeContent {
	tb.Helper()
	for _, m := range msgs {
		if m.Role == llm.RoleTool && m.ToolCallID == callID {
			var c executeCodeContent
			if err := json.Unmarshal([]byte(m.Content), &c); err != nil {
				tb.Fatalf("tool message %q: %v", m.Content, err)
			}
			return c
		}
	}
	tb.Fatalf("no tool message for %s in %+v", callID, msgs)
	return executeCodeContent{}
}

var _ = app.SandboxBackends
