package mcp_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/nagent/nagent/runtime/mcp"
	"github.com/nagent/nagent/runtime/tools"
)

// TestToolsListChanged: a tool added on the server while N-Agent is
// connected reaches the slot through notifications/tools/list_changed,
// without waiting for a reconnect. It also checks annotations and isError
// against an in-process mcp-go server, so it needs no npm packages.
func TestToolsListChanged(t *testing.T) {
	srv := server.NewMCPServer("fixture", "1.0", server.WithToolCapabilities(true))
	srv.AddTool(mcpgo.NewTool("fail", mcpgo.WithDescription("always fails"), mcpgo.WithDestructiveHintAnnotation(true)),
		func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultError("disk on fire"), nil
		})
	hs := httptest.NewServer(server.NewStreamableHTTPServer(srv))
	defer hs.Close()
	_, ts := MustStart(t, mcp.Site{ID: "fx", Name: "fx", Transport: mcp.TransportStreamableHTTP, URL: hs.URL + "/mcp", Enabled: true})

	def, ok := ts.Lookup("mcp_fx_fail")
	if !ok || def.RiskLevel != tools.RiskHigh {
		t.Fatalf("mcp_fx_fail = %+v, %v; want risk high", def, ok)
	}
	if res := call(ts, "mcp_fx_fail", `{}`); res.Status != tools.StatusError || res.Content != "mcp_fx_fail failed: MCP tool fail of site fx failed: disk on fire" {
		t.Errorf("isError result = %+v", res)
	}

	srv.AddTool(mcpgo.NewTool("late", mcpgo.WithReadOnlyHintAnnotation(true)),
		func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText("here"), nil
		})
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, ok := ts.Lookup("mcp_fx_late"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("mcp_fx_late did not appear after list_changed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if res := call(ts, "mcp_fx_late", `{}`); res.Content != "here" {
		t.Errorf("late = %+v", res)
	}
}

// TestBadToolLeftOut: a tool whose schema the ToolService refuses is left
// out; the site's other tools are still published.
func TestBadToolLeftOut(t *testing.T) {
	srv := server.NewMCPServer("fixture", "1.0", server.WithToolCapabilities(true))
	srv.AddTool(mcpgo.NewToolWithRawSchema("bad", "schema is not an object schema", []byte(`{"type":"string"}`)),
		func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText("x"), nil
		})
	srv.AddTool(mcpgo.NewTool("good"),
		func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText("ok"), nil
		})
	hs := httptest.NewServer(server.NewStreamableHTTPServer(srv))
	defer hs.Close()
	_, ts := MustStart(t, mcp.Site{ID: "fx", Name: "fx", Transport: mcp.TransportStreamableHTTP, URL: hs.URL + "/mcp", Enabled: true})
	if _, ok := ts.Lookup("mcp_fx_bad"); ok {
		t.Error("mcp_fx_bad registered despite its schema")
	}
	if res := call(ts, "mcp_fx_good", `{}`); res.Content != "ok" {
		t.Errorf("good = %+v", res)
	}
}

// registry is an in-memory mcp.Registry.
type registry struct {
	mu    sync.Mutex
	sites []mcp.Site
}

func (r *registry) ListMCPSites(context.Context) ([]mcp.Site, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.sites), nil
}

func (r *registry) set(sites ...mcp.Site) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sites = sites
}

// TestReload: with a reload interval, a site added to the registry is
// connected and its tools published; removing it withdraws them.
func TestReload(t *testing.T) {
	srv := server.NewMCPServer("fixture", "1.0", server.WithToolCapabilities(true))
	srv.AddTool(mcpgo.NewTool("ping"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("pong"), nil
	})
	hs := httptest.NewServer(server.NewStreamableHTTPServer(srv))
	defer hs.Close()
	reg := &registry{}
	ts := tools.NewToolService(allowAll{}, tools.Options{})
	svc := mcp.NewService(mcp.Options{Registry: reg, Slot: ts, ReloadInterval: 50 * time.Millisecond})
	if err := svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer svc.Close()

	eventually := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatal(what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	reg.set(mcp.Site{ID: "a", Name: "fx", Transport: mcp.TransportStreamableHTTP, URL: hs.URL + "/mcp", Enabled: true, Source: "store"})
	eventually("added site's tool did not appear", func() bool { _, ok := ts.Lookup("mcp_fx_ping"); return ok })
	if res := call(ts, "mcp_fx_ping", `{}`); res.Content != "pong" {
		t.Errorf("ping = %+v", res)
	}
	reg.set()
	eventually("removed site's tool is still there", func() bool { _, ok := ts.Lookup("mcp_fx_ping"); return !ok })
	if st := svc.Status(); len(st) != 0 {
		t.Errorf("status after removal = %+v", st)
	}
}
