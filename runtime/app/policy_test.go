package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nagent/nagent/adapters/openai"
	"github.com/nagent/nagent/runtime/app"
	"github.com/nagent/nagent/runtime/chat"
	"github.com/nagent/nagent/runtime/config"
	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/llm/scripted"
	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/store"
)

// writePolicy writes an admin policy file into the data directory.
func writePolicy(tb testing.TB, cfg *config.Config, name, body string) {
	tb.Helper()
	dir := filepath.Join(cfg.Home, "policies")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	// Write then rename, as editors do, so the watcher never reads half a file.
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		tb.Fatal(err)
	}
}

func toolNames(specs []llm.ToolSpec) []string {
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	return names
}

func hasTool(specs []llm.ToolSpec, name string) bool {
	for _, s := range specs {
		if s.Name == name {
			return true
		}
	}
	return false
}

// clockTurn scripts a model that calls get_current_time, then answers.
func clockTurn() (*scripted.Server, []scripted.Reply) {
	replies := []scripted.Reply{
		{ToolCalls: []llm.ToolCall{{ID: "call_clock", Name: "get_current_time", Arguments: `{"timezone":"UTC"}`}}},
		{Content: "done"},
	}
	return scripted.Start(replies...), replies
}

// TestPolicyExposeDenyHidesTool: an admin rule that denies get_current_time
// at expose keeps it out of the provider request's tool list.
func TestPolicyExposeDenyHidesTool(t *testing.T) {
	srv, _ := clockTurn()
	defer srv.Close()
	cfg := testConfig(t, srv)
	writePolicy(t, cfg, "hide_clock.rego", `package nagent.tools

deny contains "the clock is hidden from the model" if {
	input.phase == "expose"
	input.tool.name == "get_current_time"
}
`)
	a := MustNewApp(t, cfg)
	if err := a.Policy.LastError(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Chat.Complete(context.Background(), userTurn("hide", "time?")); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("no inference")
	}
	if hasTool(reqs[0].Tools, "get_current_time") {
		t.Errorf("tools sent to the model = %v; get_current_time should be hidden", toolNames(reqs[0].Tools))
	}
}

// TestPolicyCallDenyIsAToolResult: a rule that denies get_current_time only
// at call leaves it visible; the call becomes a denied tool result the model
// sees, a denied ToolCall record and an audit row, and the loop goes on.
func TestPolicyCallDenyIsAToolResult(t *testing.T) {
	srv, _ := clockTurn()
	defer srv.Close()
	cfg := testConfig(t, srv)
	writePolicy(t, cfg, "no_clock_calls.rego", `package nagent.tools

deny contains "clock calls are switched off by the admin" if {
	input.phase == "call"
	input.tool.name == "get_current_time"
}
`)
	a := MustNewApp(t, cfg)
	ctx := context.Background()
	res, err := a.Chat.Complete(ctx, userTurn("deny", "time?"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "completed" || res.Content != "done" {
		t.Fatalf("result = %+v; the loop should go on after a denial", res)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || !hasTool(reqs[0].Tools, "get_current_time") {
		t.Fatalf("requests = %d, first tools %v", len(reqs), toolNames(reqs[0].Tools))
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if last.Role != llm.RoleTool || last.ToolCallID != "call_clock" ||
		!strings.Contains(last.Content, "denied") || !strings.Contains(last.Content, "clock calls are switched off by the admin") {
		t.Errorf("tool message the model saw = %+v", last)
	}
	calls, err := a.DB.ListToolCalls(ctx, "deny")
	if err != nil || len(calls) != 1 || calls[0].Status != "denied" {
		t.Fatalf("tool call records = %+v, %v", calls, err)
	}

	a.Policy.Close() // flush the audit trail
	recs, err := a.DB.ListPolicyDecisions(ctx, store.PolicyDecisionFilter{SessionID: "deny"})
	if err != nil || len(recs) != 1 {
		t.Fatalf("audit records = %+v, %v", recs, err)
	}
	r := recs[0]
	if r.Tool != "get_current_time" || r.Phase != "call" || r.Allow || r.Revision != a.Policy.Revision() ||
		len(r.Reasons) != 1 || r.Reasons[0] != "clock calls are switched off by the admin" ||
		string(r.Arguments) != `{"timezone":"UTC"}` || !r.CreatedAt.Equal(referenceNow) {
		t.Errorf("audit record = %+v (arguments %s)", r, r.Arguments)
	}
}

// approve is a confirmation port whose human always says yes.
type approve struct{ asked int }

func (c *approve) Confirm(context.Context, tools.ToolCallRequest, tools.ToolDefinition, []string) (bool, error) {
	c.asked++
	return true, nil
}

// TestPolicyConfirm: an admin confirm rule asks the run's channel; in a
// cron run no human can answer, so the tool is hidden and a call denied.
func TestPolicyConfirm(t *testing.T) {
	const rule = `package nagent.tools

confirm contains "reading the clock needs a human's approval" if input.tool.name == "get_current_time"
`
	tests := []struct {
		name        string
		exec        tools.ExecutionContext
		source      string
		exposed     bool
		status      string
		contentPart string
	}{
		{name: "CronDenied", exec: tools.ExecutionContext{AgentContext: tools.AgentCron}, source: "cron",
			exposed: false, status: "denied",
			contentPart: "reading the clock needs a human's approval, and no human can answer in a cron run"},
		{name: "NoConfirmerDenied", exec: tools.ExecutionContext{AgentContext: tools.AgentPrimary}, source: "api",
			exposed: true, status: "denied", contentPart: "requires confirmation, but no human can answer"},
		{name: "ApprovedRuns", exec: tools.ExecutionContext{AgentContext: tools.AgentPrimary, Confirmer: &approve{}}, source: "acp",
			exposed: true, status: "success", contentPart: `"now"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := clockTurn()
			defer srv.Close()
			cfg := testConfig(t, srv)
			writePolicy(t, cfg, "confirm_clock.rego", rule)
			a := MustNewApp(t, cfg)
			req := chat.Request{SessionID: "c", Source: tt.source, Exec: tt.exec,
				Messages: []llm.Message{{Role: llm.RoleUser, Content: "time?"}}}
			if _, err := a.Chat.Complete(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()
			if got := hasTool(reqs[0].Tools, "get_current_time"); got != tt.exposed {
				t.Errorf("get_current_time exposed = %t, want %t", got, tt.exposed)
			}
			calls, _ := a.DB.ListToolCalls(context.Background(), "c")
			if len(calls) != 1 || calls[0].Status != tt.status || !strings.Contains(calls[0].Result, tt.contentPart) {
				t.Fatalf("tool call records = %+v; want %s mentioning %q", calls, tt.status, tt.contentPart)
			}
			if c, ok := tt.exec.Confirmer.(*approve); ok && c.asked != 1 {
				t.Errorf("confirmer asked %d times, want 1", c.asked)
			}
		})
	}
}

// TestPolicyBrokenFileAtStart: a broken admin file does not stop the
// runtime; the embedded defaults serve and the error is reported.
func TestPolicyBrokenFileAtStart(t *testing.T) {
	srv, _ := clockTurn()
	defer srv.Close()
	cfg := testConfig(t, srv)
	writePolicy(t, cfg, "broken.rego", "package nagent.tools\n\ndeny contains \"x\" if {\n")
	a := MustNewApp(t, cfg)
	if err := a.Policy.LastError(); err == nil || !strings.Contains(err.Error(), "broken.rego:") {
		t.Fatalf("LastError = %v, want it to name broken.rego", err)
	}
	res, err := a.Chat.Complete(context.Background(), userTurn("b", "time?"))
	if err != nil || res.Status != "completed" {
		t.Fatalf("turn = %+v, %v", res, err)
	}
	if calls, _ := a.DB.ListToolCalls(context.Background(), "b"); len(calls) != 1 || calls[0].Status != "success" {
		t.Errorf("tool calls under the defaults = %+v", calls)
	}
}

// TestPolicyHotReloadLiveServer drives the OpenAI-compatible server: a
// changed policy file governs the next request; a broken one keeps the old
// rule, and /readyz reports the error with file and line.
func TestPolicyHotReloadLiveServer(t *testing.T) {
	model := scripted.Start()
	defer model.Close()
	// Every turn: call the clock, then repeat what the tool said.
	model.SetResponder(func(r scripted.RecordedRequest) scripted.Reply {
		last := r.Messages[len(r.Messages)-1]
		if last.Role == llm.RoleTool {
			return scripted.Reply{Content: "tool said: " + last.Content}
		}
		return scripted.Reply{ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "get_current_time", Arguments: `{}`}}}
	})
	cfg := testConfig(t, model)
	a, err := app.New(context.Background(), cfg, app.Options{Now: func() time.Time { return referenceNow }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(openai.NewServer(a, nil).Handler())
	defer func() { srv.Close(); a.Close() }()

	ask := func(session string) string {
		t.Helper()
		body := `{"model":"scripted-model","messages":[{"role":"user","content":"time?"}]}`
		req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Session-Id", session)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Choices) == 0 {
			t.Fatalf("response: %v, %+v", err, out)
		}
		return out.Choices[0].Message.Content
	}
	readyz := func() map[string]any {
		t.Helper()
		resp, err := http.Get(srv.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var out struct {
			Status string         `json:"status"`
			Checks map[string]any `json:"checks"`
		}
		if err := json.Unmarshal(body, &out); err != nil {
			t.Fatal(err)
		}
		if out.Status != "ready" {
			t.Errorf("readyz = %s: a policy error must not make the server unready", body)
		}
		return out.Checks
	}

	if got := ask("s1"); !strings.Contains(got, `"now"`) {
		t.Fatalf("before any admin policy: %q", got)
	}
	if p, _ := readyz()["policy"].(string); !strings.HasPrefix(p, "ok") {
		t.Errorf("readyz policy = %q", p)
	}

	rev := a.Policy.Revision()
	writePolicy(t, cfg, "clock.rego", `package nagent.tools

deny contains "the clock is switched off" if {
	input.phase == "call"
	input.tool.name == "get_current_time"
}
`)
	waitFor(t, "the reload", func() bool { return a.Policy.Revision() != rev })
	if got := ask("s2"); !strings.Contains(got, "denied") || !strings.Contains(got, "the clock is switched off") {
		t.Fatalf("after the new rule: %q", got)
	}

	good := a.Policy.Revision()
	writePolicy(t, cfg, "clock.rego", `package nagent.tools

deny contains "the clock is switched off" if {
	input.tool.name ==
}
`)
	waitFor(t, "the load error", func() bool { return a.Policy.LastError() != nil })
	p, _ := readyz()["policy"].(string)
	if !strings.Contains(p, "clock.rego:5") || !strings.Contains(p, good) {
		t.Errorf("readyz policy = %q, want the error at clock.rego:5 and the revision %s still serving", p, good)
	}
	if got := ask("s3"); !strings.Contains(got, "the clock is switched off") {
		t.Fatalf("a broken file dropped the last good rule: %q", got)
	}
}

func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPolicyMemoryAdminRule: external-memory writes are decided by package
// nagent.memory, so an admin rule there refuses a write the defaults allow.
func TestPolicyMemoryAdminRule(t *testing.T) {
	srv := scripted.Start(
		scripted.Reply{ToolCalls: []llm.ToolCall{{ID: "m1", Name: "external_memory",
			Arguments: `{"action":"add","target":"user","content":"Prefers answers in Chinese."}`}}},
		scripted.Reply{Content: "noted"},
	)
	defer srv.Close()
	cfg := testConfig(t, srv)
	writePolicy(t, cfg, "memory.rego", `package nagent.memory

deny contains "user.md is edited from the dashboard only" if {
	input.target == "user.md"
	input.session.source != "dashboard"
}
`)
	a := MustNewApp(t, cfg)
	ctx := context.Background()
	if _, err := a.Chat.Complete(ctx, chat.Request{SessionID: "m", Source: "cli", ExternalMemory: []string{"builtin"},
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "remember: answer in Chinese"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cfg.Home, "memory", "user.md")); !os.IsNotExist(err) {
		t.Errorf("user.md written despite the admin rule: %v", err)
	}
	writes, err := a.DB.ListMemoryWrites(ctx, "m", 0)
	if err != nil {
		t.Fatal(err)
	}
	var refused bool
	for _, w := range writes {
		if w.Target == "user.md" && !w.Allowed && strings.Contains(strings.Join(w.Reasons, ";"), "dashboard only") {
			refused = true
		}
	}
	if !refused {
		t.Errorf("no refused user.md write among the records %+v", writes)
	}
}
