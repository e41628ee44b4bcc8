package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nagent/nagent/adapters/openai"
	"github.com/nagent/nagent/internal/plugintest"
	"github.com/nagent/nagent/runtime/app"
	"github.com/nagent/nagent/runtime/config"
	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/llm/scripted"
	"github.com/nagent/nagent/wasm"
)

// installPlugins installs plugin directories into cfg's data directory, as
// `nagent plugin install` does.
func installPlugins(tb testing.TB, cfg *config.Config, srcs ...string) {
	tb.Helper()
	for _, src := range srcs {
		if _, err := wasm.Install(context.Background(), src, cfg.PluginsDir(), nil); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestPluginToolThroughTheLoop: the model calls the Go plugin's word_count,
// the result comes back to the model, and the ToolCall record is persisted.
func TestPluginToolThroughTheLoop(t *testing.T) {
	const answer = "Your text has 5 words on 2 lines."
	srv := scripted.Start(
		scripted.Reply{ToolCalls: []llm.ToolCall{{ID: "call_wc", Name: "word_count", Arguments: `{"text":"the quick brown\nfox jumps"}`}}},
		scripted.Reply{Content: answer},
	)
	defer srv.Close()
	cfg := testConfig(t, srv)
	installPlugins(t, cfg, plugintest.Textstats(t))
	a := MustNewApp(t, cfg)
	ctx := context.Background()

	res, err := a.Chat.Complete(ctx, userTurn("wc", "How many words?"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "completed" || res.Content != answer {
		t.Fatalf("result = %+v", res)
	}
	reqs := srv.Requests()
	var offered []string
	for _, tool := range reqs[0].Tools {
		offered = append(offered, tool.Name)
	}
	if !strings.Contains(strings.Join(offered, ","), "word_count") {
		t.Errorf("tools offered to the model = %v, want word_count among them", offered)
	}
	const want = `{"words":5,"lines":2,"chars":25}`
	msgs := reqs[1].Messages
	if last := msgs[len(msgs)-1]; last.Role != llm.RoleTool || last.ToolCallID != "call_wc" || last.Content != want {
		t.Errorf("tool message = %+v, want %s", last, want)
	}
	calls, err := a.DB.ListToolCalls(ctx, "wc")
	if err != nil || len(calls) != 1 {
		t.Fatalf("tool call records = %v, %v", calls, err)
	}
	if c := calls[0]; c.ID != "call_wc" || c.Name != "word_count" || c.Status != "success" || c.Result != want {
		t.Errorf("tool call record = %+v", c)
	}
}

// TestMisbehavingPluginsLeaveServerHealthy: through the HTTP server, each
// misbehaving plugin ends in an error tool result that says what happened;
// the server answers /healthz after each, and a good plugin still works.
func TestMisbehavingPluginsLeaveServerHealthy(t *testing.T) {
	cases := []struct {
		tool, args string
		want       string
	}{
		{"loop", `{}`, "plugin loop timed out after 300ms"},
		{"grow", `{}`, "plugin grow ran out of memory"},
		{"trap", `{}`, "plugin trap crashed: integer divide by zero"},
		{"garbage", `{}`, "plugin garbage wrote invalid output"},
		{"read_file", `{"path":"/etc/passwd"}`, "open /etc/passwd"},
		{"word_count", `{"text":"still here"}`, `{"words":2,"lines":1,"chars":10}`},
	}
	model := scripted.Start()
	defer model.Close()
	// Each turn: call the tool the user names with the arguments given,
	// then repeat what the tool said.
	model.SetResponder(func(r scripted.RecordedRequest) scripted.Reply {
		last := r.Messages[len(r.Messages)-1]
		if last.Role == llm.RoleTool {
			return scripted.Reply{Content: "tool said: " + last.Content}
		}
		tool, args, _ := strings.Cut(last.Content, " ")
		return scripted.Reply{ToolCalls: []llm.ToolCall{{ID: "call_" + tool, Name: tool, Arguments: args}}}
	})
	cfg := testConfig(t, model)
	installPlugins(t, cfg,
		plugintest.Fixture(t, "loop", "limits:\n  timeout: 300ms\n"),
		plugintest.Fixture(t, "grow", "limits:\n  memory_mib: 4\n"),
		plugintest.Fixture(t, "trap", ""),
		plugintest.Fixture(t, "garbage", ""),
		plugintest.Probe(t, "", "read_file"),
		plugintest.Textstats(t),
	)
	a, err := app.New(context.Background(), cfg, app.Options{Now: func() time.Time { return referenceNow }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(openai.NewServer(a, nil).Handler())
	defer func() { srv.Close(); a.Close() }()

	for _, c := range cases {
		body, _ := json.Marshal(map[string]any{"model": "scripted-model",
			"messages": []map[string]string{{"role": "user", "content": c.tool + " " + c.args}}})
		req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Session-Id", "s-"+c.tool)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: HTTP %d", c.tool, resp.StatusCode)
		}
		calls, err := a.DB.ListToolCalls(context.Background(), "s-"+c.tool)
		if err != nil || len(calls) != 1 {
			t.Fatalf("%s: records %v, %v", c.tool, calls, err)
		}
		wantStatus := "error"
		if c.tool == "word_count" {
			wantStatus = "success"
		}
		if calls[0].Status != wantStatus || !strings.Contains(calls[0].Result, c.want) {
			t.Errorf("%s: record %s %q, want %s containing %q", c.tool, calls[0].Status, calls[0].Result, wantStatus, c.want)
		}
		health, err := http.Get(srv.URL + "/healthz")
		if err != nil || health.StatusCode != 200 {
			t.Fatalf("after %s: /healthz %v %v", c.tool, health, err)
		}
		health.Body.Close()
	}
}
