package app_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nagent/nagent/internal/mcptest"
	"github.com/nagent/nagent/runtime/config"
	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/llm/scripted"
	"github.com/nagent/nagent/runtime/mcp"
)

// mcpSiteConfigs are the reference server reached over each transport.
func mcpSiteConfigs(tb testing.TB) map[string]func() config.MCPSite {
	return map[string]func() config.MCPSite{
		"stdio": func() config.MCPSite {
			return config.MCPSite{Transport: mcp.TransportStdio, Command: mcptest.Everything(tb), Args: []string{"stdio"}}
		},
		"streamable_http": func() config.MCPSite {
			return config.MCPSite{Transport: mcp.TransportStreamableHTTP, URL: mcptest.StartHTTP(tb, 0).URL()}
		},
	}
}

func offered(req scripted.RecordedRequest) []string {
	var names []string
	for _, t := range req.Tools {
		names = append(names, t.Name)
	}
	return names
}

// TestMCPToolsThroughTheLoop: over stdio and over streamable HTTP, the model
// calls echo and get-sum of the npm reference server; the results come back
// as tool messages and the ToolCall records are persisted.
func TestMCPToolsThroughTheLoop(t *testing.T) {
	for _, transport := range []string{"stdio", "streamable_http"} {
		t.Run(transport, func(t *testing.T) {
			const answer = "The server echoed and summed."
			srv := scripted.Start(
				scripted.Reply{ToolCalls: []llm.ToolCall{
					{ID: "call_echo", Name: "mcp_everything_echo", Arguments: `{"message":"hello from nagent"}`},
					{ID: "call_sum", Name: "mcp_everything_get-sum", Arguments: `{"a":19,"b":23}`},
				}},
				scripted.Reply{Content: answer},
			)
			defer srv.Close()
			cfg := testConfig(t, srv)
			cfg.MCP.Sites = map[string]config.MCPSite{"everything": mcpSiteConfigs(t)[transport]()}
			a := MustNewApp(t, cfg)
			ctx := context.Background()

			res, err := a.Chat.Complete(ctx, userTurn("mcp", "Echo and add, please."))
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != "completed" || res.Content != answer {
				t.Fatalf("result = %+v", res)
			}
			reqs := srv.Requests()
			if names := offered(reqs[0]); !slices.Contains(names, "mcp_everything_echo") || !slices.Contains(names, "mcp_everything_get-sum") {
				t.Errorf("tools offered = %v, want the MCP tools among them", names)
			}
			msgs := reqs[1].Messages
			got := map[string]string{}
			for _, m := range msgs {
				if m.Role == llm.RoleTool {
					got[m.ToolCallID] = m.Content
				}
			}
			if got["call_echo"] != "Echo: hello from nagent" || !strings.Contains(got["call_sum"], "42") {
				t.Errorf("tool messages = %q", got)
			}
			calls, err := a.DB.ListToolCalls(ctx, "mcp")
			if err != nil || len(calls) != 2 {
				t.Fatalf("tool call records = %v, %v", calls, err)
			}
			for _, c := range calls {
				if c.Status != "success" {
					t.Errorf("tool call record = %+v", c)
				}
			}
		})
	}
}

// TestMCPToolErrorTurnGoesOn: a tool that returns isError ends in an error
// result with the server's message, and the turn goes on to an answer.
func TestMCPToolErrorTurnGoesOn(t *testing.T) {
	const answer = "That resource id was refused."
	srv := scripted.Start(
		scripted.Reply{ToolCalls: []llm.ToolCall{{ID: "call_bad", Name: "mcp_everything_get-resource-reference", Arguments: `{"resourceId":-1}`}}},
		scripted.Reply{Content: answer},
	)
	defer srv.Close()
	cfg := testConfig(t, srv)
	cfg.MCP.Sites = map[string]config.MCPSite{"everything": mcpSiteConfigs(t)["stdio"]()}
	a := MustNewApp(t, cfg)

	res, err := a.Chat.Complete(context.Background(), userTurn("mcp-err", "Fetch resource -1."))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "completed" || res.Content != answer {
		t.Fatalf("result = %+v", res)
	}
	msgs := srv.Requests()[1].Messages
	last := msgs[len(msgs)-1]
	if last.Role != llm.RoleTool || !strings.Contains(last.Content, "Invalid resourceId: -1") {
		t.Errorf("tool message = %+v, want the server's error", last)
	}
	calls, _ := a.DB.ListToolCalls(context.Background(), "mcp-err")
	if len(calls) != 1 || calls[0].Status != "error" {
		t.Errorf("tool call records = %+v", calls)
	}
}

func waitSiteHealth(tb testing.TB, svc *mcp.Service, site, health string, within time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for {
		st, _ := svc.SiteStatus(site)
		if st.Health == health {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("site %s is %s (%s), want %s", site, st.Health, st.Error, health)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestMCPServerKilledDuringSession: the server dies between turns of one
// session. The site turns unhealthy and its tools leave the next request; a
// call the model still makes is an error result and the turn completes.
// After a restart the tools come back and work.
func TestMCPServerKilledDuringSession(t *testing.T) {
	echo := func(id, msg string) scripted.Reply {
		return scripted.Reply{ToolCalls: []llm.ToolCall{{ID: id, Name: "mcp_web_echo", Arguments: `{"message":"` + msg + `"}`}}}
	}
	srv := scripted.Start(
		echo("call_1", "one"), scripted.Reply{Content: "first"},
		echo("call_2", "two"), scripted.Reply{Content: "second"},
		echo("call_3", "three"), scripted.Reply{Content: "third"},
	)
	defer srv.Close()
	server := mcptest.StartHTTP(t, 0)
	cfg := testConfig(t, srv)
	cfg.MCP.HealthInterval = config.Duration(200 * time.Millisecond)
	cfg.MCP.Sites = map[string]config.MCPSite{"web": {Transport: mcp.TransportStreamableHTTP, URL: server.URL()}}
	a := MustNewApp(t, cfg)
	ctx := context.Background()
	turn := func(want string) {
		t.Helper()
		res, err := a.Chat.Complete(ctx, userTurn("kill", "echo"))
		if err != nil || res.Status != "completed" || res.Content != want {
			t.Fatalf("turn = %+v, %v; want completed %q", res, err, want)
		}
	}
	toolMessage := func(req int) string {
		msgs := srv.Requests()[req].Messages
		return msgs[len(msgs)-1].Content
	}

	turn("first")
	if got := toolMessage(1); got != "Echo: one" {
		t.Fatalf("first tool message = %q", got)
	}

	server.Kill()
	waitSiteHealth(t, a.MCP, "web", mcp.HealthUnhealthy, 10*time.Second)
	turn("second")
	if names := offered(srv.Requests()[2]); slices.Contains(names, "mcp_web_echo") {
		t.Errorf("tools offered while the site is down = %v", names)
	}
	if got := toolMessage(3); !strings.Contains(got, "mcp_web_echo") {
		t.Errorf("tool message for a down site = %q, want an error naming the tool", got)
	}

	server.Start(t)
	waitSiteHealth(t, a.MCP, "web", mcp.HealthHealthy, 20*time.Second)
	turn("third")
	if names := offered(srv.Requests()[4]); !slices.Contains(names, "mcp_web_echo") {
		t.Errorf("tools offered after the restart = %v", names)
	}
	if got := toolMessage(5); got != "Echo: three" {
		t.Errorf("tool message after the restart = %q", got)
	}
}
